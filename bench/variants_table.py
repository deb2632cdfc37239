#!/usr/bin/env python3
"""The variants table of docs/BENCHMARKS.md from a sweep's finished runs: per setting (the sweep's
variant name, seeds pooled), the median val_bpb over its seeds, their range, the median against
the baseline's median, and the medians of tokens/s and MFU. With --mfu, the speed table instead:
each setting's MFU in every round (a seed's runs are one round, since a sweep runs every setting
of one seed before the next seed) against the baseline's in the same round, and their median.

usage: bench/variants_table.py [--nanotrain BIN] [--baseline NAME] [--mfu] DIR...
  (DIR: run folders or folders holding them, as `nanotrain runs` takes them)
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--nanotrain", default="nanotrain", help="the nanotrain binary (default: on PATH)")
    ap.add_argument("--baseline", default="baseline", help="the setting the others are compared with")
    ap.add_argument("--mfu", action="store_true", help="the MFU table: each round against the baseline's")
    a = ap.parse_args()
    try:
        out = subprocess.run([a.nanotrain, "runs", "--per-run", "--json", *a.dirs], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"variants_table.py: nanotrain runs failed: {getattr(e, 'stderr', '') or e}".strip())
    settings = {}
    for run in json.loads(out)["runs"]:
        if run.get("state") not in (None, "done") or run.get("val_bpb") is None:
            continue
        m = re.fullmatch(r"(?:\d+_)?(.+?)_seed=\d+", run["name"])
        if not m:
            sys.exit(f"variants_table.py: {run['dir']}: not a sweep run named NNN_SETTING_seed=S")
        settings.setdefault(m.group(1), []).append(run)
    if a.baseline not in settings:
        sys.exit(f"variants_table.py: no finished run of the setting {a.baseline!r}")
    if a.mfu:
        return mfu_table(settings, a.baseline)
    base = statistics.median(r["val_bpb"] for r in settings[a.baseline])
    rows = []
    for name, runs in settings.items():
        bpb = sorted(r["val_bpb"] for r in runs)
        med = statistics.median(bpb)
        rows.append((med, name, len(bpb), bpb[0], bpb[-1], statistics.median(r["tokens_per_second"] for r in runs),
                     statistics.median(r["mfu"] for r in runs), runs[0]["params"]))
    print("| setting | val_bpb, median | seeds: range | against the baseline | tokens/s | MFU | parameters |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for med, name, n, lo, hi, tps, mfu, params in sorted(rows):
        against = "" if name == a.baseline else f"{100 * (med / base - 1):+.2f} %".replace("-", "−")
        label = f"**{name}**" if name == a.baseline else name
        print(f"| {label} | {med:.4f} | {n}: {lo:.4f}–{hi:.4f} | {against} | {tps:,.0f} | {100 * mfu:.1f} % | "
              f"{params / 1e6:.1f} M |")


def seed_of(run):
    return int(re.search(r"_seed=(\d+)$", run["name"]).group(1))


def pct(x):
    return f"{100 * x:+.1f} %".replace("-", "−")


def flops_per_token(run):
    """The model FLOPs a token the run's MFU counts (its summary's), or NaN without a summary."""
    try:
        with open(os.path.join(run["dir"], "summary.json")) as f:
            return float(json.load(f)["flops_per_token"])
    except (OSError, ValueError, KeyError):
        return float("nan")


def mfu_table(settings, baseline):
    """MFU per round against the same round's baseline: rounds run minutes apart, and a shared
    machine's speed moves by several per cent between them, so only same-round ratios compare."""
    base = {seed_of(r): r["mfu"] for r in settings[baseline]}
    rows = []
    for name, runs in settings.items():
        runs = sorted(runs, key=seed_of)
        ratios = [r["mfu"] / base[seed_of(r)] - 1 for r in runs if seed_of(r) in base]
        med = statistics.median(ratios) if ratios else float("nan")
        rows.append((-med, name, statistics.median(r["mfu"] for r in runs), [r["mfu"] for r in runs], ratios,
                     flops_per_token(runs[0])))
    print("| setting | MFU, median | MFU in each round | against the baseline, each round | median | FLOPs a token |")
    print("| --- | --- | --- | --- | --- | --- |")
    for _, name, mfu, each, ratios, fpt in sorted(rows):
        label = f"**{name}**" if name == baseline else name
        against = "" if name == baseline else ", ".join(pct(x) for x in ratios)
        median = "" if name == baseline else pct(statistics.median(ratios))
        print(f"| {label} | {100 * mfu:.1f} % | {' / '.join(f'{100 * x:.1f}' for x in each)} | {against} | {median} | "
              f"{fpt / 1e6:.1f} M |")


if __name__ == "__main__":
    main()
