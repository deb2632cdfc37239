"""Mean next-token loss of a nanotrain checkpoint on a token file.

usage: /usr/bin/python3 tools/torch_ref/eval_loss.py --weights MODEL.safetensors
           --tokens TOKENS.safetensors [--dtype float32|float64] [--batch-size N]

The token stream ("tokens", int (N,)) is cut into non-overlapping windows of
seq_len + 1 tokens (a trailing partial window counts if it has >= 2 tokens); each
window predicts its tokens 1.. from the ones before.  Prints one JSON line
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
def window_loss(model, tokens, batch_size=8):
    """(total nats, total targets) over non-overlapping windows of seq_len + 1 tokens."""
    W = model.config["seq_len"] + 1
    n_full = tokens.numel() // W
    chunks = [tokens[i * W:min(i + batch_size, n_full) * W].view(-1, W)
              for i in range(0, n_full, batch_size)]
    if tokens.numel() - n_full * W >= 2:
        chunks.append(tokens[n_full * W:].view(1, -1))
    nats, count = 0.0, 0
    for chunk in chunks:
        logits = model(chunk[:, :-1])
        ce = F.cross_entropy(logits.reshape(-1, logits.size(-1)), chunk[:, 1:].reshape(-1),
                             reduction="none")
        nats += ce.double().sum().item()  # accumulate in float64 whatever the model dtype
        count += ce.numel()
    return nats, count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    ap.add_argument("--batch-size", type=int, default=8, help="windows per forward pass")
    args = ap.parse_args()
    try:
        model = load_model(args.weights, DTYPES[args.dtype])
        tokens = load_tokens(args.tokens, model.config["vocab_size"])
    except (OSError, ValueError) as e:
        print(f"eval_loss.py: {e}", file=sys.stderr)
        return 1
    nats, count = window_loss(model.eval(), tokens, max(1, args.batch_size))
    print(json.dumps({"loss": nats / count, "targets": count, "nats": nats}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
