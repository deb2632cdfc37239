#!/usr/bin/env python3
"""Keeps the finished runs of a sweep folder as small records: each run's config.json and
summary.json (a few KB; no weights, checkpoints or metrics) under DEST/<run>/, with every path
that starts with --strip made relative. `nanotrain runs DEST --markdown` tabulates them, and a
sweep started in the folder that --strip named, on a copy of them (`cp -r DEST/. OUT/`), skips
them and trains only the rest: a long sweep measured in parts on different days.

usage: bench/keep_results.py SWEEP_DIR DEST --strip PREFIX
"""
import argparse
import json
import os
import sys


def relative(value, prefix):
    if isinstance(value, str) and value.startswith(prefix):
        return value[len(prefix):]
    if isinstance(value, dict):
        return {k: relative(v, prefix) for k, v in value.items()}
    if isinstance(value, list):
        return [relative(v, prefix) for v in value]
    return value


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweep_dir")
    ap.add_argument("dest")
    ap.add_argument("--strip", required=True, help="absolute path prefix to remove (the folder the sweep ran in)")
    a = ap.parse_args()
    prefix = a.strip.rstrip("/") + "/"
    if not os.path.isdir(a.sweep_dir):
        sys.exit(f"keep_results.py: {a.sweep_dir}: not a folder")
    kept = 0
    for name in sorted(os.listdir(a.sweep_dir)):
        run = os.path.join(a.sweep_dir, name)
        if not os.path.isfile(os.path.join(run, "summary.json")):
            continue  # not a run, or not finished
        os.makedirs(os.path.join(a.dest, name), exist_ok=True)
        for f in ("config.json", "summary.json"):
            with open(os.path.join(run, f)) as src:
                record = relative(json.load(src), prefix)
            tmp = os.path.join(a.dest, name, f + ".tmp")
            with open(tmp, "w") as out:
                json.dump(record, out, indent=2)
                out.write("\n")
            os.replace(tmp, os.path.join(a.dest, name, f))
        kept += 1
    print(f"kept {kept} finished run(s) of {a.sweep_dir} in {a.dest}")


if __name__ == "__main__":
    main()
