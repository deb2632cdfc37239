"""Train the reference GPT with PyTorch on CPU, for speed/quality comparison with nanotrain.

usage: /usr/bin/python3 tools/torch_ref/train_bench.py --depth 4 --d-model 256 --n-head 4
           --head-dim 64 --seq-len 256 --vocab-size 4096 --batch-size 8 --steps 20
           [--n-kv-head K] [--threads 2] [--dtype fp32|bf16] [--tokens FILE | --shards DIR]
           [--time-budget SECONDS] [--val-tokens FILE] [--save-weights FILE]
           [--warmdown-frac 0.5] [--final-lr-frac 0.0] [--seed S]

Default optimizer hyperparameters and nanotrain's learning-rate schedule (constant, then a
linear warm-down over the last --warmdown-frac of the progress to --final-lr-frac; progress
is training time / --time-budget, or step / --steps).  Batches are consecutive B*T+1 token
spans of --tokens (wrapping around), B windows of T+1 tokens at seeded random offsets of a
nanotrain data folder's training shards (--shards, nanoGPT's sampling), or uniform random
tokens.  With --time-budget no step starts that the last step's time says would end after
the budget (nanotrain's rule), so training overruns it by at most its last iteration (JSON
last_iteration_seconds).  Step timing starts after 2 warm-up steps.  --save-weights
writes the trained model as a nanotrain model.safetensors (nanotrain's `eval bpb` reads it
from a run folder).  Prints one JSON line.

For PyTorch's full speed, start it as tools/compare_pytorch.sh does (its PT_ENV): pinned threads,
passive waits, and GLIBC_TUNABLES keeping freed memory in the process.  Without the last, glibc
hands the large tensors back to the kernel every step and their pages fault in again: on a
virtual machine that more than halved PyTorch's tokens/s.
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

from eval_loss import load_tokens, window_loss
from model import GPT
from optim import GPTOptimizer
from st import write_safetensors

WARMUP_STEPS = 2


SHARD_MAGIC = b"NTSHARD\0"
SHARD_HEADER = 128


def read_shard(path, vocab_size):
    """The tokens of one nanotrain shard (docs/FORMATS.md) as an int64 tensor."""
    with open(path, "rb") as f:
        head = f.read(SHARD_HEADER)
        if len(head) < SHARD_HEADER or head[:8] != SHARD_MAGIC:
            raise ValueError(f"{path}: not a nanotrain token shard (bad magic)")
        width = int.from_bytes(head[16:20], "little")
        vocab = int.from_bytes(head[20:24], "little")
        count = int.from_bytes(head[32:40], "little")
        if width not in (2, 4):
            raise ValueError(f"{path}: token width {width}, expected 2 or 4")
        if vocab > vocab_size:
            raise ValueError(f"{path}: vocabulary {vocab} is larger than --vocab-size {vocab_size}")
        data = f.read()
    if len(data) != count * width:
        raise ValueError(f"{path}: truncated shard (header says {count} tokens, file has {len(data) // width})")
    return torch.from_numpy(np.frombuffer(data, dtype="<u2" if width == 2 else "<u4").astype(np.int64))


def read_train_shards(folder, vocab_size):
    """All training tokens of a nanotrain data folder (data.json's train_shards, in order)."""
    meta_path = os.path.join(folder, "data.json")
    try:
        with open(meta_path) as f:
            meta = json.load(f)
        names = meta["train_shards"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ValueError(f"{meta_path}: not a nanotrain data.json (no train_shards)") from None
    if not names:
        raise ValueError(f"{meta_path}: no training shards")
    return torch.cat([read_shard(os.path.join(folder, n), vocab_size) for n in names])


def lr_multiplier(progress, warmdown_frac, final_lr_frac):
    """nanotrain's schedule without warm-up (optim/schedule.cc): 1, then linear to final_lr_frac."""
    if warmdown_frac > 0 and progress > 1.0 - warmdown_frac:
        w = max(0.0, 1.0 - progress) / warmdown_frac
        return final_lr_frac + (1.0 - final_lr_frac) * w
    return 1.0


def batches(tokens, B, T, V, seed, random_windows=False):
    """Yields (inputs, targets), each (B, T)."""
    gen = torch.Generator().manual_seed(seed)
    span, pos = B * T + 1, 0
    while True:
        if random_windows:
            starts = torch.randint(0, tokens.numel() - T, (B,), generator=gen)
            rows = torch.stack([tokens[s:s + T + 1] for s in starts.tolist()])
            yield rows[:, :-1], rows[:, 1:]
            continue
        if tokens is None:
            buf = torch.randint(0, V, (span,), generator=gen)
        else:
            if pos + span > tokens.numel():
                pos = 0
            buf = tokens[pos:pos + span]
            pos += span - 1  # the next span starts at this one's last target
        yield buf[:-1].view(B, T), buf[1:].view(B, T)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag in ("--depth", "--d-model", "--n-head", "--head-dim", "--seq-len", "--vocab-size",
                 "--batch-size"):
        ap.add_argument(flag, type=int, required=True)
    ap.add_argument("--n-kv-head", type=int, help="default: --n-head")
    ap.add_argument("--steps", type=int, help="default 20; with --time-budget, an optional cap")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32")
    ap.add_argument("--tokens", help="safetensors with 'tokens' I32 (N,); random tokens otherwise")
    ap.add_argument("--shards", help="nanotrain data folder: random windows of its training shards")
    ap.add_argument("--time-budget", type=float, help="train for this many seconds")
    ap.add_argument("--val-tokens", help="safetensors with 'tokens'; report val_loss after training")
    ap.add_argument("--save-weights", help="write the trained weights here (nanotrain model.safetensors)")
    ap.add_argument("--warmdown-frac", type=float, default=0.5)
    ap.add_argument("--final-lr-frac", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.tokens and args.shards:
        ap.error("--tokens and --shards: give one of them")
    if args.time_budget is not None and not args.time_budget > 0:
        ap.error(f"--time-budget {args.time_budget}: must be positive")
    if not 0.0 <= args.warmdown_frac <= 1.0:
        ap.error(f"--warmdown-frac {args.warmdown_frac}: must be in [0, 1]")
    if not 0.0 <= args.final_lr_frac <= 1.0:
        ap.error(f"--final-lr-frac {args.final_lr_frac}: must be in [0, 1]")

    torch.set_num_threads(args.threads)
    config = {"depth": args.depth, "d_model": args.d_model, "n_head": args.n_head,
              "n_kv_head": args.n_kv_head or args.n_head, "head_dim": args.head_dim,
              "seq_len": args.seq_len, "vocab_size": args.vocab_size}
    B, T = args.batch_size, args.seq_len
    try:
        model = GPT(config).init_weights(args.seed)
        tokens = load_tokens(args.tokens, args.vocab_size) if args.tokens else None
        if args.shards:
            tokens = read_train_shards(args.shards, args.vocab_size)
        val_tokens = load_tokens(args.val_tokens, args.vocab_size) if args.val_tokens else None
        if tokens is not None and tokens.numel() < B * T + 1:
            raise ValueError(f"{args.tokens or args.shards}: fewer than batch_size*seq_len+1 = {B * T + 1} tokens")
    except (OSError, ValueError) as e:
        print(f"train_bench.py: {e}", file=sys.stderr)
        return 1
    max_steps = args.steps if args.steps is not None else (None if args.time_budget else 20)

    # With bf16 autocast, Newton-Schulz in bf16 as well, as nanochat's Muon runs it: PyTorch's
    # faster setting (fp32 Newton-Schulz took ~0.4 s more a step at depth 6).
    opt = GPTOptimizer(model, ns_dtype=torch.bfloat16 if args.dtype == "bf16" else None)
    data = batches(tokens, B, T, args.vocab_size, args.seed, random_windows=bool(args.shards))
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if args.dtype == "bf16"
                else contextlib.nullcontext())
    step_times, loss, step, last, last_iteration = [], float("nan"), 0, 0.0, 0.0
    loss_curve = []  # (seconds since the start, loss) after every step
    start = time.perf_counter()
    while max_steps is None or step < max_steps:
        t_iter = time.perf_counter()
        elapsed = t_iter - start
        if args.time_budget is not None and elapsed + last > args.time_budget:
            break
        progress = elapsed / args.time_budget if args.time_budget else step / max_steps
        inputs, targets = next(data)
        t0 = time.perf_counter()
        opt.zero_grad()
        with autocast:
            loss_t = model(inputs, targets)
        loss_t.backward()
        opt.step(lr_multiplier(progress, args.warmdown_frac, args.final_lr_frac))
        loss = loss_t.item()
        last = time.perf_counter() - t0
        loss_curve.append([round(time.perf_counter() - start, 4), loss])
        last_iteration = time.perf_counter() - t_iter
        if step >= WARMUP_STEPS:
            step_times.append(last)
        step += 1

    timed = sum(step_times)
    result = {
        "tokens_per_second": B * T * len(step_times) / timed if step_times else None,
        "step_seconds_median": statistics.median(step_times) if step_times else None,
        "steps": step,
        "tokens_trained": B * T * step,
        "train_seconds": time.perf_counter() - start,
        # The budget rule's bound: train_seconds <= budget + this (the last batch and step).
        "last_iteration_seconds": last_iteration,
        "dtype": args.dtype,
        "final_loss": loss,
        "loss_curve": loss_curve,
    }
    if val_tokens is not None:
        nats, count = window_loss(model.eval(), val_tokens, B)  # evaluated in fp32
        result["val_loss"] = nats / count
    if args.save_weights:
        weights = {name: p.detach().float() for name, p in model.named_parameters()}
        try:
            write_safetensors(args.save_weights, weights,
                              {"config": json.dumps(model.config), "format": "nanotrain-gpt"})
        except OSError as e:
            print(f"train_bench.py: {args.save_weights}: {e.strerror}", file=sys.stderr)
            return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
