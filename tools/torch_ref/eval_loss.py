"""Mean next-token loss of a nanotrain checkpoint on a token file.

usage: /usr/bin/python3 tools/torch_ref/eval_loss.py --weights MODEL.safetensors
           --tokens TOKENS.safetensors [--dtype float32|float64] [--batch-size N]

The token stream ("tokens", int (N,)) is cut into windows of seq_len targets that
overlap by one token, so every token after the first is predicted exactly once from the
ones before it in its window (nanotrain's validation windows).  Prints one JSON line
{"loss": nats / targets, "targets": ..., "nats": ...}.
"""
import argparse
import json
import sys

import torch
import torch.nn.functional as F

from parity import DTYPES, load_model
from st import read_safetensors


def load_tokens(path, vocab_size):
    tensors, _ = read_safetensors(path)
    tokens = tensors.get("tokens")
    if tokens is None or tokens.dim() != 1 or tokens.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"{path}: needs a 1-D integer tensor 'tokens'")
    if tokens.numel() < 2:
        raise ValueError(f"{path}: needs at least 2 tokens")
    if tokens.min() < 0 or tokens.max() >= vocab_size:
        raise ValueError(f"{path}: token ids must lie in [0, {vocab_size})")
    return tokens.long()


@torch.no_grad()
def window_loss(model, tokens, batch_size=8, ignore=()):
    """(total nats, total targets): windows of seq_len targets with stride seq_len (consecutive
    windows share one token), so every token after the first is a target exactly once, as in
    nanotrain's validation loader. Targets whose id is in `ignore` (special tokens) are skipped."""
    T = model.config["seq_len"]
    n_targets = tokens.numel() - 1
    nats, count = 0.0, 0
    starts = list(range(0, n_targets, T))
    for b in range(0, len(starts), batch_size):
        for s in starts[b:b + batch_size]:
            window = tokens[s:min(s + T, n_targets) + 1].view(1, -1)
            logits = model(window[:, :-1])
            tg = window[:, 1:].reshape(-1)
            ce = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tg, reduction="none")
            keep = torch.ones_like(tg, dtype=torch.bool)
            for i in ignore:
                keep &= tg != i
            nats += ce[keep].double().sum().item()  # accumulate in float64 whatever the dtype
            count += int(keep.sum().item())
    return nats, count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    ap.add_argument("--batch-size", type=int, default=8, help="windows per forward pass")
    ap.add_argument("--ignore-target", type=int, action="append", default=[],
                    help="token id whose targets are skipped (special tokens); repeatable")
    args = ap.parse_args()
    try:
        model = load_model(args.weights, DTYPES[args.dtype])
        tokens = load_tokens(args.tokens, model.config["vocab_size"])
    except (OSError, ValueError) as e:
        print(f"eval_loss.py: {e}", file=sys.stderr)
        return 1
    nats, count = window_loss(model.eval(), tokens, max(1, args.batch_size), args.ignore_target)
    print(json.dumps({"loss": nats / count, "targets": count, "nats": nats}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
