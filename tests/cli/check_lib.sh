# Shared by the command-line test scripts (sourced): pass/fail counting and the checks.
#   ok NAME | bad NAME | skip NAME     record one result
#   check NAME 'SHELL CONDITION'       ok if the condition holds (returns 1 if not, so that
#                                      `check ... || cat LOG` shows what went wrong)
#   expect_error NAME PATTERN CMD...   ok if CMD fails with one stderr line matching PATTERN
#   finish                             prints the tally; exits 1 on a failure, 77 (CTest's
#                                      "skipped") if nothing passed but something was skipped
pass=0 failed=0 skipped=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; }
skip() { skipped=$((skipped + 1)); echo "skip $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; return 1; fi; }
finish() {
  echo "$pass passed, $failed failed, $skipped skipped"
  [ "$failed" -eq 0 ] || exit 1
  [ "$pass" -gt 0 ] || [ "$skipped" -eq 0 ] || exit 77
  exit 0
}
expect_error() {
  local name=$1 pat=$2
  shift 2
  local err rc
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne 0 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && grep -qE -- "$pat" <<<"$err"; then
    ok "$name"
  else
    bad "$name (rc=$rc, stderr: $err)"
  fi
}
