#!/usr/bin/env bash
# `nanotrain bench --kernel-cases` walks exactly the kernel tests' cases: for every table the tests
# run on this machine (the ones they do not skip) and every case they list (--gtest_list_tests of
# the kernel test binaries), a timed row of every op the family checks, with a positive, finite time
# and rate, and no row the tests do not have. Then --case-tables and --case-filter, the progress
# lines, and one-line errors for bad flags.
# usage: bench_cases_test.sh NANOTRAIN WORK_DIR MATMUL_TEST MATMUL_BF16_TEST ATTENTION_TEST ROWS_TEST
set -u
NT=$1 TMP=$2
shift 2
TESTS=("$@")
rm -rf "$TMP" && mkdir -p "$TMP"
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
PY=/usr/bin/python3

# The tests' cases, as their binaries list them ("Family/Fixture.Test/param  # GetParam() = table case").
for t in "${TESTS[@]}"; do "$t" --gtest_list_tests; done >"$TMP/list.txt"
check "the kernel tests list their cases" "[ \$(grep -c 'GetParam() = ' '$TMP/list.txt') -gt 500 ]"
# The tables the tests run here: the 1-element rotary case of each table, run, passed not skipped.
rows_test=${TESTS[3]}
"$rows_test" --gtest_filter='Rope/KernelRope.Rope/*_b1_t1_h1_d2' >"$TMP/tables.out" 2>&1
grep -oE '^\[       OK \] Rope/KernelRope\.Rope/[a-z0-9_]+' "$TMP/tables.out" | sed 's/.*Rope\.Rope\///' \
  >"$TMP/ok_params.txt"
check "the tests run at least the AVX2 table" "grep -q '^cpu_avx2_' '$TMP/ok_params.txt'"

"$NT" bench --kernel-cases --quick --json "$TMP/cases.json" >"$TMP/cases.out" 2>"$TMP/cases.err"
check "bench --kernel-cases --quick exits 0" "[ $? -eq 0 ]"

# check_cases JSON: every (table, family, case, op) the tests have on the tables they run, timed;
# nothing else; the tables those the tests run, the default (best) table last.
cat >"$TMP/check.py" <<'PY'
import json, math, re, sys
doc, listing, ok_params = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), open(sys.argv[3]).read().split()
families = {'Matmul': 'matmul', 'MatmulBf16': 'matmul_bf16', 'MatmulBf16Out': 'matmul_bf16_out',
            'Attention': 'attention', 'AttentionBf16': 'attention_bf16', 'Rows': 'rows', 'RowsBf16': 'rows_bf16',
            'Rope': 'rope'}
ops = {'matmul': ['matmul'], 'matmul_bf16': ['matmul_bf16'], 'matmul_bf16_out': ['matmul_bf16_out'],
       'attention': ['attention_fwd', 'attention_bwd'],
       'attention_bf16': ['attention_fwd_bf16', 'attention_bwd_bf16'],
       'rows': ['rmsnorm_fwd', 'rmsnorm_bwd', 'softcap_xent', 'softcap_xent_bf16', 'relu2_fwd', 'relu2_bwd',
                'gelu_fwd', 'gelu_bwd', 'swiglu_fwd', 'swiglu_bwd'],
       'rows_bf16': ['rmsnorm_fwd_bf16', 'rmsnorm_bwd_bf16'],
       'rope': ['rope_fwd', 'rope_bwd', 'rope_norm_fwd', 'rope_norm_bwd']}
run_tables, cases, suite = [], {}, None
for line in listing.splitlines():
    if not line.startswith(' '):
        suite = families.get(line.split('/')[0]) if '/' in line else None
        continue
    m = re.match(r'\s+(\S+)\s+# GetParam\(\) = (\S+) (\S+)$', line)
    if not m or suite is None:
        continue
    param, table, case = m.groups()
    param = param.split('/')[-1]  # Test/param
    if suite == 'rope' and param in ok_params:
        run_tables.append(table)
    cases.setdefault(suite, set()).add((table, case))
run_tables = sorted(set(run_tables), key=lambda t: ['cpu-avx2', 'cpu-avx512', 'cpu-avx512bf16', 'cpu-amx'].index(t))
kc = doc['kernel_cases']
assert kc['tables'] == run_tables, (kc['tables'], run_tables)
assert doc['machine']['kernels'] == run_tables[-1], doc['machine']
assert set(cases) == set(ops), sorted(cases)
have = {}
for r in kc['rows']:
    assert 'skipped' not in r, ('a table the tests run skipped an op they check', r)
    assert r['ms'] > 0 and math.isfinite(r['ms']), r
    rate = r['gflops'] if r['family'].startswith(('matmul', 'attention')) else r['gbs']
    assert rate > 0 and math.isfinite(rate), r
    assert (r['family'] == 'matmul' or r['family'] == 'matmul_bf16') == ('beta' in r), r
    key = (r['table'], r['family'], r['case'])
    assert (r['table'], r['case']) in cases[r['family']], ('a row the tests do not have', r)
    have.setdefault(key, set()).add(r['op'])
want = 0
for family, pairs in cases.items():
    for table, case in pairs:
        if table not in run_tables:
            continue
        want += 1
        got = have.get((table, family, case), set())
        assert got == set(ops[family]), ('missing', table, family, case, set(ops[family]) - got)
assert want == len(have) and want > 400, (want, len(have))
print(len(kc['rows']), 'rows,', want, 'cases on', run_tables)
PY
check "every table the tests run and every case they list: each op timed, nothing else" \
  "$PY '$TMP/check.py' '$TMP/cases.json' '$TMP/list.txt' '$TMP/ok_params.txt'"
# The check itself fails on a missing case row, a missing table, and a row the tests do not have.
$PY - "$TMP/cases.json" "$TMP" <<'PY'
import copy, json, sys
d = json.load(open(sys.argv[1]))
rows = d['kernel_cases']['rows']
a = copy.deepcopy(d); a['kernel_cases']['rows'] = [r for r in rows if r['case'] != rows[-1]['case']]
b = copy.deepcopy(d); last = b['kernel_cases']['tables'].pop()
b['kernel_cases']['rows'] = [r for r in rows if r['table'] != last]
c = copy.deepcopy(d); c['kernel_cases']['rows'].append(dict(rows[0], case='3x3x3_nn'))
for name, doc in (('no_case', a), ('no_table', b), ('extra', c)):
    json.dump(doc, open(f'{sys.argv[2]}/{name}.json', 'w'))
PY
for bad in no_case no_table extra; do
  check "the check rejects a JSON with $bad" "! $PY '$TMP/check.py' '$TMP/$bad.json' '$TMP/list.txt' '$TMP/ok_params.txt' 2>/dev/null"
done
ntables=$($PY -c "import json,sys; print(len(json.load(open(sys.argv[1]))['kernel_cases']['tables']))" "$TMP/cases.json")
check "a progress line on stderr per table" "[ \$(grep -c '^bench: timing the kernel cases on cpu-' '$TMP/cases.err') -eq $ntables ]"
check "the text table: a section per table, the rows with their rates" \
  "[ \$(grep -c '^kernel cases on cpu-' '$TMP/cases.out') -eq $ntables ] && grep -qE '^  attention_bf16 +attention_bwd_bf16 +b1_t1100_h1_kv1_d72 .* GF/s$' '$TMP/cases.out' && grep -qE '^  rows +softcap_xent +31x1000 .* GB/s$' '$TMP/cases.out'"

# --case-tables with the reference, --case-filter: only the matching rows, on those tables.
"$NT" bench --kernel-cases --quick --case-tables cpu-avx2,ref --case-filter 31x1000 --json "$TMP/ref.json" \
  >"$TMP/ref.out" 2>&1
check "--case-tables cpu-avx2,ref --case-filter 31x1000: the 10 row ops of that case on those tables, timed" "$PY - '$TMP/ref.json' <<'PY'
import json, sys
kc = json.load(open(sys.argv[1]))['kernel_cases']
assert kc['tables'] == ['cpu-avx2', 'ref'], kc['tables']
assert all(r['family'] == 'rows' and r['case'] == '31x1000' and r['ms'] > 0 for r in kc['rows']), kc['rows']
for t in kc['tables']:
    assert len({r['op'] for r in kc['rows'] if r['table'] == t}) == 10, t
assert len(kc['rows']) == 20, len(kc['rows'])
PY"
NANOTRAIN_NO_AVX512=1 "$NT" bench --kernel-cases --quick --case-filter 1x1x1_nn --json "$TMP/avx2.json" \
  >/dev/null 2>&1
check "NANOTRAIN_NO_AVX512=1: the AVX2 table alone" \
  "$PY -c 'import json,sys; kc = json.load(open(sys.argv[1]))[\"kernel_cases\"]; assert kc[\"tables\"] == [\"cpu-avx2\"], kc[\"tables\"]' '$TMP/avx2.json'"

expect_error "--case-tables names a table this machine lacks" "--case-tables cpu-nope: not a kernel table this machine runs \(cpu-avx2" \
  "$NT" bench --kernel-cases --case-tables cpu-nope
expect_error "--case-filter that matches nothing" "--case-filter zzz: no op or case matches it" \
  "$NT" bench --kernel-cases --quick --case-filter zzz
expect_error "--case-tables without --kernel-cases" "--case-tables ref: only with --kernel-cases" \
  "$NT" bench --case-tables ref
expect_error "--kernel-cases with --roofline" "--kernel-cases: the tests' cases are timed alone" \
  "$NT" bench --kernel-cases --roofline "$TMP/r.svg"
finish
