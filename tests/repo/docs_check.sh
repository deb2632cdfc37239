#!/usr/bin/env bash
# Checks the repository's rules for docs and comments, one line per violation:
#   - README.md at most 250 lines, every docs/*.md at most 600;
#   - no tracked file mentions the old planning file's name or the removed performance log;
#   - no source or doc file speaks of the project's own development history (numbered work periods, tracker
#     numbers, "before this change", "in round N");
#   - no file under src/ longer than 500 lines, and no function longer than 80 outside the kernels
#     (src/backends);
#   - no block of more than 6 consecutive // comment lines that reports measurements (two or
#     more figures with a unit of time, rate or ratio: one figure is taken to be a specification).
# usage: tests/repo/docs_check.sh REPO_ROOT        (exit 0: clean; 1: violations; 2: usage)
set -euo pipefail
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: docs_check.sh REPO_ROOT" >&2
  exit 2
fi
cd "$1"
self=tests/repo/docs_check.sh
fails=0
fail() { echo "docs_check: $*"; fails=$((fails + 1)); }

# The files to check: git's list where this is a work tree, else every file outside build folders.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files)
else
  mapfile -t files < <(find . -path ./.git -prune -o -path './build*' -prune -o -type f -print | sed 's|^\./||' | sort)
fi
existing=()
for f in "${files[@]}"; do [ -f "$f" ] && existing+=("$f"); done
files=("${existing[@]}")

# 1. Sizes of the docs.
if [ -f README.md ]; then
  n=$(wc -l <README.md)
  [ "$n" -le 250 ] || fail "README.md: $n lines (at most 250)"
fi
for f in "${files[@]}"; do
  case "$f" in
    docs/*.md)
      n=$(wc -l <"$f")
      [ "$n" -le 600 ] || fail "$f: $n lines (at most 600)"
      ;;
  esac
done

# Text files to search, the checker itself excluded (it spells out what it looks for).
others=()
for f in "${files[@]}"; do [ "$f" = "$self" ] || others+=("$f"); done
text=()
[ ${#others[@]} -gt 0 ] && mapfile -t text < <(grep -Il . -- "${others[@]}" 2>/dev/null || true)

# 2. Names of files that no longer exist or never belonged in the repository.
if [ ${#text[@]} -gt 0 ]; then
  while IFS= read -r hit; do
    fail "${hit%%:*}:$(cut -d: -f2 <<<"$hit"): mentions the old planning file PERF"".md"
  done < <(grep -n -F 'PERF''.md' -- "${text[@]}" || true)
  while IFS= read -r hit; do
    fail "${hit%%:*}:$(cut -d: -f2 <<<"$hit"): points to docs/PERFORMANCE"".md, which is now docs/BENCHMARKS.md"
  done < <(grep -n -F 'PERFORMANCE''.md' -- "${text[@]}" || true)
fi

# 3. The project's development history in sources and docs.
sources=()
for f in "${text[@]}"; do
  case "$f" in
    tests/fuzz/corpus/*) ;;
    *.cc | *.h | *.md | *.sh | *.py | *.cjs | *.cmake | CMakeLists.txt | */CMakeLists.txt | .ci/*) sources+=("$f") ;;
  esac
done
ordinal='first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|[a-z]+teenth|twenty(-[a-z]+)?|thirty(-[a-z]+)?|this|last|previous|earlier|later|next|same|that'
history_patterns=(
  "\\b($ordinal) sess""ions?\\b"
  '\bsess''ions? (#|no\.? ?)?[0-9]+\b'
  '\bissues? ?#[0-9]+'
  '\bissues? [0-9]+\b'
  "\\bthe issue's\\b"
  '\b(in|since|until|after|before) round [0-9]+\b'
  '\b(before|after|since) this change\b'
  '\bwe measured in\b'
)
if [ ${#sources[@]} -gt 0 ]; then
  for p in "${history_patterns[@]}"; do
    while IFS= read -r hit; do
      file=${hit%%:*}
      rest=${hit#*:}
      line=${rest%%:*}
      fail "$file:$line: development history ('$(grep -o -i -E -m1 "$p" <<<"${rest#*:}" | head -1)')"
    done < <(grep -n -i -E -- "$p" "${sources[@]}" || true)
  done
fi

# 4. Source files of one job each: at most 500 lines.
src=()
for f in "${files[@]}"; do
  case "$f" in src/*) src+=("$f") ;; esac
done
if [ ${#src[@]} -gt 0 ]; then
  while read -r n f; do
    [ "$f" = total ] && continue
    [ "$n" -le 500 ] || fail "$f: $n lines (a file under src/ has at most 500)"
  done < <(wc -l -- "${src[@]}")
fi

# 4b. Functions of one job each, outside the kernels: at most 80 lines from the signature's line
#     to the closing brace at the start of a line (the code's style puts both at column 0).
if [ ${#src[@]} -gt 0 ]; then
  while IFS= read -r l; do fail "$l"; done < <(python3 - "${src[@]}" <<'PY'
import re, sys
for path in sys.argv[1:]:
    if not path.endswith(('.cc', '.h')) or path.startswith('src/backends/'):
        continue
    lines = open(path, encoding='utf-8', errors='replace').read().split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        head = ''.join(lines[max(0, i - 3):i + 1])
        if (line and not line[0].isspace() and line.rstrip().endswith('{') and '(' in head and
                not re.match(r'(namespace|struct|class|enum|union|extern)\b', line)):
            j = i + 1
            while j < len(lines) and lines[j] != '}' and not lines[j].startswith('};'):
                j += 1
            if j - i + 1 > 80:
                print(f"{path}:{i + 1}: a {j - i + 1}-line function (at most 80 outside src/backends)")
            i = j
        i += 1
PY
)
fi

# 5. Comments say why; figures belong in docs/BENCHMARKS.md. A block of more than 6 consecutive
#    // lines that holds measurements (two or more numbers with a unit of time, rate or ratio) fails.
unit='([0-9][0-9,]*(\.[0-9]+)?)[[:space:]]*(ms|us|ns|%|GFLOP/s|TFLOP/s|GF/s|GB/s|MB/s|tokens/s|tok/s|x faster|x slower|× faster|× slower|×[[:space:]]|×$|times faster|times slower)'
code=()
for f in "${files[@]}"; do
  case "$f" in *.cc | *.h | *.cjs) code+=("$f") ;; esac
done
blocks=""
if [ ${#code[@]} -gt 0 ]; then
  blocks=$(awk -v unit="$unit" '
    function flush() {
      if (n > 6 && hit >= 2) printf "%s:%d: a %d-line comment reports measurements (move the figures to docs/BENCHMARKS.md)\n", name, start, n
      n = 0; hit = 0
    }
    FNR == 1 { flush(); name = FILENAME }
    /^[[:space:]]*\/\// { if (n == 0) start = FNR; n++; line = $0; hit += gsub(unit, "", line); next }
    { flush() }
    END { flush() }
  ' "${code[@]}")
fi
if [ -n "$blocks" ]; then
  while IFS= read -r l; do fail "$l"; done <<<"$blocks"
fi

if [ "$fails" -gt 0 ]; then
  echo "docs_check: FAILED, $fails violation(s)"
  exit 1
fi
echo "docs_check: ok"
