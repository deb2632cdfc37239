"""Self-test of the reference implementation.  usage: /usr/bin/python3 tools/torch_ref/selftest.py

Checks: (a) gradients vs finite differences (float64), (b) GQA attention vs explicit
KV-head repetition, plus rotary vs complex multiplication, (c) Muon output singular
values and step scale, AdamW vs torch.optim.AdamW, (d) safetensors round trip, and
(e) the parity / eval_loss / train_bench command lines on a tiny model.
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

from eval_loss import window_loss
from model import GPT, apply_rotary, causal_attention, rotary_tables
from optim import AdamW, Muon, newton_schulz, normuon
from st import read_safetensors, write_safetensors

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = {"depth": 2, "d_model": 32, "n_head": 2, "n_kv_head": 1, "head_dim": 16,
        "seq_len": 8, "vocab_size": 64}


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def tiny_model(seed=0):
    """Tiny float64 model with every weight non-zero (the zero-initialised projections
    would otherwise make most gradients vanish and the check vacuous)."""
    model = GPT(TINY, torch.float64).init_weights(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.5 / math.sqrt(p.shape[1]))
    return model


def tiny_batch(seed=0, B=2, T=8):
    gen = torch.Generator().manual_seed(seed)
    inputs = torch.randint(0, TINY["vocab_size"], (B, T), generator=gen)
    targets = torch.randint(0, TINY["vocab_size"], (B, T), generator=gen)
    targets[0, :3] = -1  # exercise ignore_index
    return inputs, targets


def test_gradients():
    model = tiny_model()
    inputs, targets = tiny_batch()
    loss = model(inputs, targets)
    loss.backward()
    gen = torch.Generator().manual_seed(2)
    h = 1e-6

    def loss_at(p, delta):
        with torch.no_grad():
            p.add_(delta)
            value = model(inputs, targets).item()
            p.sub_(delta)
        return value

    for name, p in model.named_parameters():
        g = p.grad
        # A few single coordinates (including the largest gradient) plus one random
        # direction, which touches every entry at once.
        coords = [int(g.abs().argmax())] + torch.randint(0, p.numel(), (4,), generator=gen).tolist()
        probes = []
        for c in coords:
            e = torch.zeros_like(p).view(-1)
            e[c] = 1.0
            probes.append(e.view_as(p))
        d = torch.randn(p.shape, generator=gen, dtype=p.dtype)
        probes.append(d / d.norm())
        for e in probes:
            numeric = (loss_at(p, h * e) - loss_at(p, -h * e)) / (2 * h)
            analytic = (g * e).sum().item()
            check(abs(numeric - analytic) <= 1e-7 + 1e-5 * abs(analytic),
                  f"{name}: finite difference {numeric:.10g} vs autograd {analytic:.10g}")
    check(model.transformer.wte.weight.grad.abs().sum() > 0, "no gradient reached wte")


def test_attention_and_rotary():
    gen = torch.Generator().manual_seed(3)
    B, T, D = 2, 7, 16
    for H, KVH in ((4, 1), (4, 2), (6, 3), (3, 3)):
        q = torch.randn(B, H, T, D, generator=gen, dtype=torch.float64)
        k = torch.randn(B, KVH, T, D, generator=gen, dtype=torch.float64)
        v = torch.randn(B, KVH, T, D, generator=gen, dtype=torch.float64)
        k_rep, v_rep = k.repeat_interleave(H // KVH, 1), v.repeat_interleave(H // KVH, 1)
        # Straightforward per-query loop over the visible prefix.
        ref = torch.empty(B, H, T, D, dtype=torch.float64)
        for t in range(T):
            s = (q[:, :, t:t + 1] @ k_rep[:, :, :t + 1].transpose(-1, -2)) / math.sqrt(D)
            ref[:, :, t] = (s.softmax(-1) @ v_rep[:, :, :t + 1])[:, :, 0]
        got = causal_attention(q, k, v)
        check(torch.allclose(got, ref, atol=1e-12), f"GQA attention H={H} KVH={KVH} mismatch")

    # Rotary: (x1 + i x2) * exp(-i angle) gives exactly (y1, y2) of the half-split layout.
    x = torch.randn(B, T, 3, D, generator=gen, dtype=torch.float64)
    cos, sin = rotary_tables(T, D, 10000.0)
    z = torch.complex(x[..., :D // 2], x[..., D // 2:]) * torch.polar(
        torch.ones_like(cos), -torch.atan2(sin, cos))[None, :, None, :]
    ref = torch.cat((z.real, z.imag), -1)
    check(torch.allclose(apply_rotary(x, cos, sin), ref, atol=1e-12), "rotary mismatch")
    check(torch.allclose(cos[3, 1], torch.tensor(math.cos(3 * 10000.0 ** (-2 / D)), dtype=torch.float64)),
          "rotary frequency mismatch")


def test_optimizers():
    gen = torch.Generator().manual_seed(4)
    for shape in ((128, 32), (32, 128)):
        X = newton_schulz(torch.randn(shape, generator=gen), 5)
        s = torch.linalg.svdvals(X)
        check(X.shape == shape and s.min() > 0.5 and s.max() < 1.5,
              f"Muon {shape}: singular values in [{s.min():.3f}, {s.max():.3f}]")

    # Polar Express: a spectrum spread over [1e-2, 1] (by an SVD in float64) lands in [0.85, 1.15].
    U, _, V = torch.linalg.svd(torch.randn(48, 80, generator=gen, dtype=torch.float64), full_matrices=False)
    G = U @ torch.diag(torch.logspace(0, -2, 48, dtype=torch.float64)) @ V
    s = torch.linalg.svdvals(newton_schulz(G, 5, "polar-express"))
    check(s.min() > 0.85 and s.max() < 1.15, f"Polar Express: singular values in [{s.min():.3f}, {s.max():.3f}]")
    # NorMuon keeps the norm and equalises the rows of a tall matrix (from a zero state).
    X = torch.randn(40, 8, generator=gen, dtype=torch.float64) * torch.arange(1, 41, dtype=torch.float64)[:, None]
    Y = normuon(X, torch.zeros(40, 1, dtype=torch.float64), 0.9)
    rows = torch.linalg.norm(Y, dim=1)
    check(torch.isclose(torch.linalg.norm(Y), torch.linalg.norm(X)) and torch.allclose(rows, rows[0]),
          "NorMuon: norm kept, rows equalised")

    # With momentum 0 the update is lr * sqrt(max(1, rows/cols)) * NS(grad).
    p = torch.randn(96, 24, generator=gen, dtype=torch.float64)
    p0, g = p.clone(), torch.randn(96, 24, generator=gen, dtype=torch.float64)
    p.grad = g
    Muon([p], lr=0.1, momentum=0.0).step(lrm=0.5)
    check(torch.allclose(p, p0 - 0.05 * 2.0 * newton_schulz(g, 5), atol=1e-14), "Muon step scale")

    # AdamW must agree with torch's (same decoupled decay, bias correction and eps placement).
    a = torch.randn(10, 6, generator=gen, dtype=torch.float64)
    b = a.clone().requires_grad_()
    a.requires_grad_()
    mine = AdamW([a], lr=0.01, betas=(0.8, 0.95), eps=1e-10, weight_decay=0.1)
    ref = torch.optim.AdamW([b], lr=0.01, betas=(0.8, 0.95), eps=1e-10, weight_decay=0.1)
    for lrm in (1.0, 0.7, 0.3):
        g = torch.randn(10, 6, generator=gen, dtype=torch.float64)
        a.grad, b.grad = g.clone(), g.clone()
        mine.step(lrm)
        ref.param_groups[0]["lr"] = 0.01 * lrm
        ref.step()
    check(torch.allclose(a, b, rtol=0, atol=1e-14), "AdamW differs from torch.optim.AdamW")


def test_safetensors(tmp):
    tensors = {
        "f32": torch.randn(3, 5),
        "f64": torch.randn(2, 2, 2, dtype=torch.float64),
        "i32": torch.tensor([-1, 0, 2**31 - 1], dtype=torch.int32),
        "i64": torch.tensor([[2**40, -7]], dtype=torch.int64),
        "empty": torch.zeros(0, 4),
        "scalar": torch.tensor(1.5, dtype=torch.float64),
    }
    meta = {"config": json.dumps(TINY), "note": "héllo"}
    path = os.path.join(tmp, "rt.safetensors")
    write_safetensors(path, tensors, meta)
    with open(path, "rb") as f:
        check(struct.unpack("<Q", f.read(8))[0] % 8 == 0, "header not padded to 8 bytes")
    back, back_meta = read_safetensors(path)
    check(back_meta == meta, "metadata changed in round trip")
    check(back.keys() == tensors.keys(), "tensor names changed in round trip")
    for name, t in tensors.items():
        check(back[name].dtype == t.dtype and torch.equal(back[name], t), f"'{name}' changed in round trip")


def run_cli(script, *args):
    return subprocess.run([sys.executable, os.path.join(HERE, script), *args],
                          capture_output=True, text=True)


def test_cli(tmp):
    model = tiny_model(5)
    names = [n for n, _ in model.named_parameters()]
    write_safetensors(os.path.join(tmp, "model.safetensors"),
                      {n: p.detach().float() for n, p in model.named_parameters()},
                      {"config": json.dumps(TINY)})
    inputs, targets = tiny_batch(6)
    write_safetensors(os.path.join(tmp, "batch.safetensors"),
                      {"inputs": inputs.int(), "targets": targets.int()})
    steps = 6
    with open(os.path.join(tmp, "opt.json"), "w") as f:
        json.dump({"steps": steps, "lrm": [1.0] * (steps - 1) + [0.5]}, f)

    r = run_cli("parity.py", "--dir", tmp)
    check(r.returncode == 0, f"parity.py failed: {r.stderr.strip()}")
    out, _ = read_safetensors(os.path.join(tmp, "out.safetensors"))
    check(all(t.dtype == torch.float64 for t in out.values()), "parity output is not F64")
    check(out["loss"].shape == (1,) and out["losses"].shape == (steps,), "parity output shapes")
    check(out["loss"][0] == out["losses"][0], "loss != losses[0]")
    check(out["losses"][-1] < out["losses"][0], f"loss did not fall: {out['losses'].tolist()}")
    # Gradients agree with an in-process computation from the float32-stored weights.
    ref = GPT.from_weights(TINY, {n: p.detach().float() for n, p in model.named_parameters()},
                           torch.float64)
    ref(inputs, targets).backward()
    for n, p in ref.named_parameters():
        check(torch.allclose(out[f"grad.{n}"], p.grad, atol=1e-12), f"parity grad.{n} mismatch")
    check(all(f"final.{n}" in out for n in names), "parity final.* missing")

    with open(os.path.join(tmp, "opt.json"), "w") as f:
        json.dump({"steps": 2, "lrm": [1.0]}, f)
    r = run_cli("parity.py", "--dir", tmp)
    check(r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1,
          f"bad opt.json: rc {r.returncode}, stderr {r.stderr!r}")

    # eval_loss: 31 tokens -> 30 targets in windows of 8 targets overlapping by one token.
    tokens = torch.randint(0, TINY["vocab_size"], (31,), generator=torch.Generator().manual_seed(7))
    write_safetensors(os.path.join(tmp, "tokens.safetensors"), {"tokens": tokens.int()})
    r = run_cli("eval_loss.py", "--weights", os.path.join(tmp, "model.safetensors"),
                "--tokens", os.path.join(tmp, "tokens.safetensors"), "--dtype", "float64")
    check(r.returncode == 0, f"eval_loss.py failed: {r.stderr.strip()}")
    result = json.loads(r.stdout)
    T = TINY["seq_len"]
    windows = [tokens[s:min(s + T, 30) + 1] for s in range(0, 30, T)]
    nats = sum(ref(w[None, :-1], w[None, 1:]).item() * (w.numel() - 1) for w in windows)
    check(result["targets"] == 30 and abs(result["nats"] - nats) < 1e-9,
          f"eval_loss {result} vs nats {nats}")
    nats_b, count_b = window_loss(ref, tokens, batch_size=2)  # batching must not change the sum
    check(count_b == 30 and abs(nats_b - nats) < 1e-9, f"window_loss batched: {nats_b} vs {nats}")

    r = run_cli("train_bench.py", "--depth", "1", "--d-model", "32", "--n-head", "2",
                "--head-dim", "16", "--seq-len", "8", "--vocab-size", "64", "--batch-size", "2",
                "--steps", "4", "--dtype", "bf16", "--tokens", os.path.join(tmp, "tokens.safetensors"),
                "--val-tokens", os.path.join(tmp, "tokens.safetensors"))
    check(r.returncode == 0, f"train_bench.py failed: {r.stderr.strip()}")
    result = json.loads(r.stdout)
    check(result["steps"] == 4 and result["tokens_per_second"] > 0 and "val_loss" in result,
          f"train_bench output {result}")


def main():
    torch.set_num_threads(1)
    tests = [("gradients vs finite differences", test_gradients),
             ("GQA attention and rotary", test_attention_and_rotary),
             ("Muon and AdamW", test_optimizers)]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        tests += [("safetensors round trip", lambda: test_safetensors(tmp)),
                  ("parity/eval_loss/train_bench CLIs", lambda: test_cli(tmp))]
        for label, fn in tests:
            t0 = time.perf_counter()
            try:
                fn()
                print(f"PASS {label} ({time.perf_counter() - t0:.1f}s)")
            except AssertionError as e:
                failures += 1
                print(f"FAIL {label}: {e}")
    print("selftest:", "OK" if not failures else f"{failures} FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
