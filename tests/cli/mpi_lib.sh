# Shared by the MPI test scripts (sourced): comparing the step losses of two run folders.
#   losses RUN          the step losses of RUN/metrics.jsonl, one a line
#   max_rel RUN1 RUN2   the largest relative difference between two runs' losses ("inf" when the
#                       step counts differ)
#   close X             true if X <= 1e-6
losses() { python3 -c 'import json,sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j["type"] == "step": print(repr(j["loss"]))' "$1/metrics.jsonl"; }
max_rel() { python3 -c 'import sys
a = open(sys.argv[1]).read().split(); b = open(sys.argv[2]).read().split()
print(max(abs(float(x) - float(y)) / abs(float(x)) for x, y in zip(a, b)) if len(a) == len(b) and a else "inf")' \
  <(losses "$1") <(losses "$2"); }
close() { python3 -c "import sys; sys.exit(0 if float('$1') <= 1e-6 else 1)"; }
