#!/usr/bin/env python3
# Checks a run's learning-rate multipliers (metrics.jsonl, lr_mult of each step) against a plain
# statement of the schedule: linear warm-up from 0 over warmup, flat, linear warm-down over the
# last warmdown to final. Progress is step / steps for a step-count run, and for a time-budgeted
# run the training time used before the step (the previous step's train_seconds) / budget, also
# across a resume. The steps must run 1, 2, ... with no gap or repeat, and training time must
# only grow.
# usage: lr_schedule_check.py RUN_DIR WARMUP WARMDOWN FINAL steps=N | budget=SECONDS
import json
import sys


def multiplier(p, warmup, warmdown, final):
    p = min(max(p, 0.0), 1.0)
    if warmup > 0 and p < warmup:
        return p / warmup
    if warmdown > 0 and p > 1 - warmdown:
        return final + (1 - final) * (1 - p) / warmdown
    return 1.0


def main():
    run, warmup, warmdown, final = sys.argv[1], *map(float, sys.argv[2:5])
    kind, value = sys.argv[5].split("=")
    steps = [j for j in map(json.loads, open(f"{run}/metrics.jsonl")) if j["type"] == "step"]
    assert steps, "no steps logged"
    used_before = 0.0
    for i, s in enumerate(steps):
        assert s["step"] == i + 1, f"step {s['step']} where {i + 1} was due"
        p = i / float(value) if kind == "steps" else used_before / float(value)
        want = multiplier(p, warmup, warmdown, final)
        assert abs(s["lr_mult"] - want) < 1e-9, f"step {i + 1}: lr_mult {s['lr_mult']}, the schedule gives {want} (progress {p})"
        assert s["train_seconds"] > used_before, f"step {i + 1}: training time went back to {s['train_seconds']}"
        used_before = s["train_seconds"]
    print(f"{len(steps)} steps on the schedule")


main()
