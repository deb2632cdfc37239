"""Train the reference GPT with PyTorch on CPU, for speed/quality comparison with nanotrain.

usage: /usr/bin/python3 tools/torch_ref/train_bench.py --depth 4 --d-model 256 --n-head 4
           --head-dim 64 --seq-len 256 --vocab-size 4096 --batch-size 8 --steps 20
           [--n-kv-head K] [--threads 2] [--dtype fp32|bf16] [--tokens FILE]
           [--time-budget SECONDS [--val-tokens FILE]] [--seed S]

Default optimizer hyperparameters, lr multiplier 1 throughout.  Batches are
consecutive B*T+1 token spans of --tokens (wrapping around), or uniform random
tokens.  Step timing starts after 2 warm-up steps.  Prints one JSON line.
"""
import argparse
import contextlib
import json
import statistics
import sys
import time

import torch

from eval_loss import load_tokens, window_loss
from model import GPT
from optim import GPTOptimizer

WARMUP_STEPS = 2


def batches(tokens, B, T, V, seed):
    """Yields (inputs, targets), each (B, T)."""
    gen = torch.Generator().manual_seed(seed)
    span, pos = B * T + 1, 0
    while True:
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
    ap.add_argument("--time-budget", type=float, help="train for this many seconds")
    ap.add_argument("--val-tokens", help="safetensors with 'tokens'; report val_loss after training")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    config = {"depth": args.depth, "d_model": args.d_model, "n_head": args.n_head,
              "n_kv_head": args.n_kv_head or args.n_head, "head_dim": args.head_dim,
              "seq_len": args.seq_len, "vocab_size": args.vocab_size}
    B, T = args.batch_size, args.seq_len
    try:
        model = GPT(config).init_weights(args.seed)
        tokens = load_tokens(args.tokens, args.vocab_size) if args.tokens else None
        val_tokens = load_tokens(args.val_tokens, args.vocab_size) if args.val_tokens else None
        if tokens is not None and tokens.numel() < B * T + 1:
            raise ValueError(f"{args.tokens}: fewer than batch_size*seq_len+1 = {B * T + 1} tokens")
    except (OSError, ValueError) as e:
        print(f"train_bench.py: {e}", file=sys.stderr)
        return 1
    max_steps = args.steps if args.steps is not None else (None if args.time_budget else 20)

    opt = GPTOptimizer(model)
    data = batches(tokens, B, T, args.vocab_size, args.seed)
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if args.dtype == "bf16"
                else contextlib.nullcontext())
    step_times, loss, step = [], float("nan"), 0
    start = time.perf_counter()
    while max_steps is None or step < max_steps:
        if args.time_budget is not None and time.perf_counter() - start >= args.time_budget:
            break
        inputs, targets = next(data)
        t0 = time.perf_counter()
        opt.zero_grad()
        with autocast:
            loss_t = model(inputs, targets)
        loss_t.backward()
        opt.step()
        loss = loss_t.item()
        if step >= WARMUP_STEPS:
            step_times.append(time.perf_counter() - t0)
        step += 1

    timed = sum(step_times)
    result = {
        "tokens_per_second": B * T * len(step_times) / timed if step_times else None,
        "step_seconds_median": statistics.median(step_times) if step_times else None,
        "steps": step,
        "dtype": args.dtype,
        "final_loss": loss,
    }
    if val_tokens is not None:
        nats, count = window_loss(model.eval(), val_tokens, B)  # evaluated in fp32
        result["val_loss"] = nats / count
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
