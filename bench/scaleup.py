#!/usr/bin/env python3
"""Predicts data-parallel tokens/s at larger rank counts from two measurements of this machine.

  COMPUTE.json: nanotrain bench --no-kernels --configs frontier --dtype bf16 --json COMPUTE.json
                (one process: what one host computes in a step, and its optimizer)
  COMM.json:    mpirun -np 2 ... nanotrain bench --no-kernels --no-steps --json COMM.json
                (the link between two ranks: latency alpha, seconds a byte beta)

  bench/scaleup.py COMPUTE.json COMM.json [--ranks 8,64,512] [--global-batch 524288] [--json]

Each rank is a host like the measured one. A step sums the fp32 gradients (G bytes = 4 x
parameters) onto their owners and shares the updated fp32 parameters back (G bytes again); the
sharded optimizer divides its work by p; nothing overlaps the compute. Standard cost models:

  ring (reduce-scatter + all-gather):   2 (p-1) alpha + 2 (p-1)/p G beta
  tree (pipelined binary trees, both):  2 ceil(log2 p) alpha + 2 G beta
  chain (nanotrain's own sum today):    (p-1) (alpha + C beta) + G beta   (rank-ordered, chunks of C = 4 MiB)
                                        + ceil(log2 p) (alpha + G/p beta) (each owner's tensors broadcast)

Weak scaling: every rank computes the measured step's tokens. Strong scaling: a fixed global
batch (--global-batch tokens a step, nanochat's 524,288 by default) divided over the ranks, the
compute shrinking in proportion; a rank needs at least one sequence. Communication dominates
where it takes longer than the compute of the step.
"""
import argparse
import json
import math
import sys


def fail(msg):
    sys.exit(f"bench/scaleup.py: {msg}")


def load(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: cannot read {what}: {e}")


def comm_time(model, p, G, alpha, beta):
    if p == 1:
        return 0.0
    if model == "ring":
        return 2 * (p - 1) * alpha + 2 * (p - 1) / p * G * beta
    if model == "tree":
        return 2 * math.ceil(math.log2(p)) * alpha + 2 * G * beta
    C = 4 << 20
    return (p - 1) * (alpha + C * beta) + G * beta + math.ceil(math.log2(p)) * (alpha + G / p * beta)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("compute")
    ap.add_argument("comm")
    ap.add_argument("--ranks", default="8,64,512")
    ap.add_argument("--global-batch", type=int, default=524288)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    try:
        ranks = [int(x) for x in a.ranks.split(",") if x]
    except ValueError:
        fail(f"--ranks {a.ranks}: not a comma list of rank counts")
    if not ranks or min(ranks) < 1:
        fail(f"--ranks {a.ranks}: rank counts must be positive")
    steps = load(a.compute, "a bench result").get("steps") or fail(f"{a.compute}: no training steps in it")
    row = steps[0]
    comm = load(a.comm, "a bench result under mpirun").get("comm") or fail(
        f"{a.comm}: no communication figures (run bench under mpirun)")
    for k in ("forward_backward_ms", "optimizer_ms", "params"):
        if k not in row:
            fail(f"{a.compute}: its step row has no {k} (a bench of another version?)")
    T = row["config"]["seq_len"]
    tokens = row["batch"] * T
    fb, opt = row["forward_backward_ms"] / 1e3, row["optimizer_ms"] / 1e3
    G = 4.0 * row["params"]
    alpha, beta = comm["latency_seconds"], comm["seconds_per_byte"]
    out = {"model": row["model"], "dtype": row["dtype"], "params": row["params"], "step_tokens": tokens,
           "forward_backward_seconds": fb, "optimizer_seconds": opt, "latency_seconds": alpha,
           "bandwidth_gbs": 1e-9 / beta, "gradient_bytes": G, "weak": [], "strong": [], "dominates_from": {}}
    for p in ranks:
        for kind in ("weak", "strong"):
            per_rank = tokens if kind == "weak" else a.global_batch / p
            if per_rank < T:
                out[kind].append({"ranks": p, "note": f"under one sequence ({per_rank:.0f} tokens) a rank"})
                continue
            compute = fb * per_rank / tokens + opt / p
            r = {"ranks": p, "tokens_per_rank": per_rank, "compute_seconds": compute}
            for m in ("ring", "tree", "chain"):
                c = comm_time(m, p, G, alpha, beta)
                r[m] = {"comm_seconds": c, "tokens_per_second": p * per_rank / (compute + c),
                        "comm_share": c / (compute + c)}
            out[kind].append(r)
    # The smallest rank count where the communication outlasts the compute (weak scaling; up to 2^20).
    for m in ("ring", "tree", "chain"):
        p = 2
        while p <= 1 << 20 and comm_time(m, p, G, alpha, beta) <= fb + opt / p:
            p *= 2
        out["dominates_from"][m] = p if p <= 1 << 20 else None
    if a.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{row['model']} {row['dtype']}: {row['params'] / 1e6:.1f} M parameters, {G / 2**20:.0f} MiB of fp32 "
          f"gradients; a host computes {tokens} tokens in {fb:.2f} s + optimizer {opt:.2f} s; link latency "
          f"{alpha * 1e6:.1f} us, bandwidth {1e-9 / beta:.2f} GB/s")
    for kind, title in (("weak", f"every rank {tokens} tokens a step"),
                        ("strong", f"{a.global_batch} tokens a step over all ranks")):
        print(f"\n{title}:")
        print(f"  {'ranks':>6} {'compute s':>10} | {'ring tok/s':>12} {'comm':>6} | {'tree tok/s':>12} {'comm':>6} | "
              f"{'chain tok/s':>12} {'comm':>6}")
        for r in out[kind]:
            if "note" in r:
                print(f"  {r['ranks']:>6}  {r['note']}")
                continue
            cells = " | ".join(f"{r[m]['tokens_per_second']:>12,.0f} {100 * r[m]['comm_share']:>5.1f}%"
                               for m in ("ring", "tree", "chain"))
            print(f"  {r['ranks']:>6} {r['compute_seconds']:>10.3f} | {cells}")
    print("\ncommunication outlasts the compute (every rank the measured step) from: " +
          ", ".join(f"{m} {v if v else 'beyond 2^20'} ranks" for m, v in out["dominates_from"].items()))


if __name__ == "__main__":
    main()
