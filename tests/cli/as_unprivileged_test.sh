#!/usr/bin/env bash
# The hostile-input suite again as an unprivileged user (nobody, through setpriv), with its own
# HOME and a shared, world-writable /tmp-like parent: what another user of a shared machine meets.
# Root ignores permission bits, so a suite run only as root proves nothing about them. Needs root
# to switch user; elsewhere it exits 77 (skipped, named in CTest's summary).
# usage: as_unprivileged_test.sh NANOTRAIN WORK_DIR
set -u
NT=$(realpath "$1") TMP=$2
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
  echo "skipped: needs root and setpriv to run the suite as user nobody"
  exit 77
fi
rm -rf "$TMP" && mkdir -p "$TMP"
TMP=$(realpath "$TMP")
# The binary and the scripts where nobody can read them (the build may sit in root's home), and a
# sticky world-writable parent for the suite's work folder, as /tmp is.
mkdir -p "$TMP/bin" "$TMP/shared"
cp "$NT" "$TMP/bin/nanotrain"
cp "$(dirname "${BASH_SOURCE[0]}")"/{hostile_inputs_test.sh,check_lib.sh} "$TMP/bin/"
chmod -R a+rX "$TMP" && chmod 1777 "$TMP/shared"
mkdir -p "$TMP/shared/home" && chown 65534:65534 "$TMP/shared/home"
cd "$TMP/shared"
AS_NOBODY=(env HOME="$TMP/shared/home" setpriv --reuid=65534 --regid=65534 --clear-groups)
uid=$("${AS_NOBODY[@]}" id -u)
[ "$uid" = 65534 ] || { echo "FAIL: setpriv did not switch to nobody (uid $uid)"; exit 1; }
"${AS_NOBODY[@]}" bash "$TMP/bin/hostile_inputs_test.sh" "$TMP/bin/nanotrain" "$TMP/shared/work"
