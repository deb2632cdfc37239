"""Test oracle: loss, gradients and a few optimizer steps for nanotrain's C++ tests.

usage: /usr/bin/python3 tools/torch_ref/parity.py --dir DIR [--dtype float32|float64]

Reads DIR/model.safetensors (weights, config JSON under metadata "config"),
DIR/batch.safetensors ("inputs", "targets": int (B, T), target -1 = ignore) and
DIR/opt.json; writes DIR/out.safetensors (all F64):
  loss (1)         loss at the initial weights
  grad.<name>      its gradient for every parameter
  losses (steps)   loss before each optimizer step (same batch every step)
  final.<name>     every parameter after all steps
"""
import argparse
import json
import os
import sys

import torch

from model import GPT
from optim import GPTOptimizer, default_hparams, resolve_hparams
from st import read_safetensors, write_safetensors

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def load_batch(path, cfg):
    tensors, _ = read_safetensors(path)
    if "inputs" not in tensors or "targets" not in tensors:
        raise ValueError(f"{path}: needs tensors 'inputs' and 'targets'")
    inputs, targets = tensors["inputs"], tensors["targets"]
    for name, t in (("inputs", inputs), ("targets", targets)):
        if t.dtype not in (torch.int32, torch.int64) or t.dim() != 2:
            raise ValueError(f"{path}: '{name}' must be a 2-D integer tensor, got {t.dtype} {tuple(t.shape)}")
    if inputs.shape != targets.shape:
        raise ValueError(f"{path}: inputs {tuple(inputs.shape)} and targets {tuple(targets.shape)} differ in shape")
    B, T = inputs.shape
    if B < 1 or not 1 <= T <= cfg["seq_len"]:
        raise ValueError(f"{path}: batch shape {(B, T)} invalid for seq_len {cfg['seq_len']}")
    V = cfg["vocab_size"]
    if inputs.min() < 0 or inputs.max() >= V:
        raise ValueError(f"{path}: input ids must lie in [0, {V})")
    if targets.min() < -1 or targets.max() >= V:
        raise ValueError(f"{path}: target ids must lie in [-1, {V})")
    if (targets == -1).all():
        raise ValueError(f"{path}: every target is -1, the loss is undefined")
    return inputs.long(), targets.long()


def load_opt(path, d_model):
    """opt.json -> (steps, lrm list, hparams). Missing hyperparameters take the defaults."""
    with open(path) as f:
        try:
            raw = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: bad JSON ({e})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: must hold a JSON object")
    steps = raw.get("steps")
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise ValueError(f"{path}: 'steps' must be a non-negative integer")
    lrm = raw.get("lrm", [1.0] * steps)
    if not isinstance(lrm, list) or len(lrm) != steps or \
            not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in lrm):
        raise ValueError(f"{path}: 'lrm' must be a list of {steps} numbers")
    hp = resolve_hparams(read_hparams(raw, default_hparams(d_model), path))
    return steps, [float(x) for x in lrm], hp


def read_hparams(raw, hp, path):
    """hp updated from the keys of `raw` it has, each checked against its default's type."""
    for key, default in hp.items():
        if key not in raw:
            continue
        value = raw[key]
        if isinstance(default, bool) or isinstance(default, str) or default is None:
            want = bool if isinstance(default, bool) else str
            if not isinstance(value, want):
                raise ValueError(f"{path}: '{key}' must be a {want.__name__}")
        elif not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ValueError(f"{path}: '{key}' must be a number")
        hp[key] = value
    if hp["ns_steps"] != int(hp["ns_steps"]) or hp["ns_steps"] < 0:
        raise ValueError(f"{path}: 'ns_steps' must be a non-negative integer")
    return hp


def load_model(path, dtype):
    weights, meta = read_safetensors(path)
    if "config" not in meta:
        raise ValueError(f"{path}: no 'config' in __metadata__")
    return GPT.from_weights(meta["config"], weights, dtype)


def run(model, inputs, targets, steps, lrm, hp):
    """Returns the output tensors (still in the working dtype)."""
    opt = GPTOptimizer(model, hp) if steps > 0 else None  # steps 0: the loss and gradients only
    params = dict(model.named_parameters())
    out, losses = {}, []
    for step in range(max(steps, 1)):  # at least one pass for the initial loss/gradient
        for p in params.values():
            p.grad = None
        loss = model(inputs, targets)
        loss.backward()
        if step == 0:
            out["loss"] = loss.detach().reshape(1)
            out.update({f"grad.{n}": p.grad.detach().clone() for n, p in params.items()})
        if step < steps:
            losses.append(loss.detach())
            opt.step(lrm[step])
    out["losses"] = torch.stack(losses) if losses else torch.zeros(0)
    out.update({f"final.{n}": p.detach() for n, p in params.items()})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="float64")
    args = ap.parse_args()
    dtype = DTYPES[args.dtype]
    try:
        model = load_model(os.path.join(args.dir, "model.safetensors"), dtype)
        inputs, targets = load_batch(os.path.join(args.dir, "batch.safetensors"), model.config)
        steps, lrm, hp = load_opt(os.path.join(args.dir, "opt.json"), model.config["d_model"])
    except (OSError, ValueError) as e:
        print(f"parity.py: {e}", file=sys.stderr)
        return 1
    out = run(model, inputs, targets, steps, lrm, hp)
    write_safetensors(os.path.join(args.dir, "out.safetensors"),
                      {k: v.to(torch.float64) for k, v in out.items()},
                      {"dtype": args.dtype})
    return 0


if __name__ == "__main__":
    sys.exit(main())
