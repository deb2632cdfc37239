"""Test oracle for the optimizers alone: a few steps on given parameters and gradients.

usage: /usr/bin/python3 tools/torch_ref/optim_parity.py --dir DIR [--dtype float32|float64]

Reads from DIR:
  params.safetensors  the parameters (2-D F32), __metadata__ "groups": JSON {name: group}
                      with group one of matrix embed head value_embed resid_lambdas
                      x0_lambdas gates
  grads.safetensors   "<step>.<name>": the gradient of every parameter at every step
  opt.json            nanotrain's optimizer settings (OptimConfig's JSON) and "d_model",
                      "steps", "lrm", "progress", "warmdown" (lists of `steps` numbers)
and writes DIR/out.safetensors (all F64): per parameter "final.<name>" (after all steps),
"m.<name>" (Adam's first moment or Muon's momentum) and "v.<name>" (Adam's second moment, or
NorMuon's factored second moment: (rows, 1) for tall or square matrices, else (1, cols)).
"""
import argparse
import json
import os
import sys

import torch

from optim import ADAM_GROUPS, GPTOptimizer, default_hparams, resolve_hparams
from parity import DTYPES, read_hparams
from st import read_safetensors, write_safetensors


class Params(torch.nn.Module):
    """A bag of named parameters standing in for a model."""

    def __init__(self, tensors, d_model):
        super().__init__()
        self.config = {"d_model": d_model}
        self.names = list(tensors)
        for i, t in enumerate(tensors.values()):
            self.register_parameter(f"p{i}", torch.nn.Parameter(t.clone()))

    def named(self):
        return dict(zip(self.names, self.parameters()))


def number_list(raw, key, steps, path):
    xs = raw.get(key, [0.0] * steps if key != "lrm" else [1.0] * steps)
    if not isinstance(xs, list) or len(xs) != steps or \
            not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs):
        raise ValueError(f"{path}: '{key}' must be a list of {steps} numbers")
    return [float(x) for x in xs]


def load(dir_, dtype):
    params, meta = read_safetensors(os.path.join(dir_, "params.safetensors"))
    groups = json.loads(meta.get("groups", "{}"))
    valid = set(ADAM_GROUPS) | {"matrix"}
    for name in params:
        if groups.get(name) not in valid:
            raise ValueError(f"params.safetensors: no valid group for {name}")
    grads, _ = read_safetensors(os.path.join(dir_, "grads.safetensors"))
    path = os.path.join(dir_, "opt.json")
    with open(path) as f:
        raw = json.load(f)
    steps, d_model = raw.get("steps"), raw.get("d_model")
    if not isinstance(steps, int) or steps < 1 or not isinstance(d_model, int) or d_model < 1:
        raise ValueError(f"{path}: 'steps' and 'd_model' must be positive integers")
    hp = resolve_hparams(read_hparams(raw, default_hparams(d_model), path))
    sched = {k: number_list(raw, k, steps, path) for k in ("lrm", "progress", "warmdown")}
    for s in range(steps):
        for name, p in params.items():
            g = grads.get(f"{s}.{name}")
            if g is None or g.shape != p.shape:
                raise ValueError(f"grads.safetensors: missing or misshapen '{s}.{name}'")
    params = {n: t.to(dtype) for n, t in params.items()}
    grads = {n: t.to(dtype) for n, t in grads.items()}
    return params, groups, grads, hp, d_model, steps, sched


def run(params, groups, grads, hp, d_model, steps, sched):
    model = Params(params, d_model)
    named = model.named()
    opt = GPTOptimizer(model, hp, groups={f"p{i}": groups[n] for i, n in enumerate(model.names)})
    for s in range(steps):
        for name, p in named.items():
            p.grad = grads[f"{s}.{name}"].clone()
        opt.step(sched["lrm"][s], sched["progress"][s], sched["warmdown"][s])
    out = {}
    state = {}
    for adam in opt.adam.values():
        state.update({id(p): (m, v) for p, m, v in zip(adam.params, adam.m, adam.v)})
    state.update({id(p): (b, v) for p, b, v in zip(opt.muon.params, opt.muon.buf, opt.muon.v)})
    for name, p in named.items():
        m, v = state[id(p)]
        out.update({f"final.{name}": p.detach(), f"m.{name}": m, f"v.{name}": v})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="float64")
    args = ap.parse_args()
    try:
        loaded = load(args.dir, DTYPES[args.dtype])
    except (OSError, ValueError, json.JSONDecodeError) as e:
        print(f"optim_parity.py: {e}", file=sys.stderr)
        return 1
    out = run(*loaded)
    write_safetensors(os.path.join(args.dir, "out.safetensors"),
                      {k: v.to(torch.float64).contiguous() for k, v in out.items()}, {"dtype": args.dtype})
    return 0


if __name__ == "__main__":
    sys.exit(main())
