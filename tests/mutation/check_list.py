#!/usr/bin/env python3
"""Every fault of mutations.py must still apply: its original text occurs exactly once in its file,
so that the once-per-release mutation check never stops at a fault whose code has moved on.
usage: check_list.py SOURCE_DIR"""
import os
import sys

src = sys.argv[1]
sys.path.insert(0, os.path.join(src, "tests", "mutation"))
from mutations import MUTATIONS  # noqa: E402

bad = 0
for name, path, good, _bad, _targets, _regex in MUTATIONS:
    try:
        count = open(os.path.join(src, path)).read().count(good)
    except OSError as e:
        count, path = 0, f"{path} ({e.strerror})"
    if count != 1:
        print(f"FAIL {name}: its text occurs {count} times in {path} (expected once)")
        bad += 1
print(f"{len(MUTATIONS) - bad} of {len(MUTATIONS)} faults apply")
sys.exit(1 if bad else 0)
