#!/usr/bin/env bash
# Run folders that cannot be written, and a disk that fills up mid-write:
#  - as an unprivileged user (root ignores permission bits): a read-only parent folder, a
#    read-only finished run resumed, read-only outputs of `data prepare` and `tokenizer train`;
#  - on a small tmpfs: a disk that fills while the first checkpoint is written, and while a
#    later one is.
# Each must end with exit code 1 and a last stderr line naming the file and the problem (no
# crash, no hang), leave no temporary file behind, and change no good file: the checkpoints
# that remain must resume.
# The unprivileged part needs root (to switch user with setpriv); the disk part needs to mount a
# tmpfs (root, or an unprivileged user namespace). Without either, that part is reported as
# skipped and the script exits 77 (CTest's "skipped") if nothing at all could run.
# usage: disk_faults_test.sh NANOTRAIN WORK_DIR
set -u
NT=$(realpath "$1") TMP=$2
rm -rf "$TMP" && mkdir -p "$TMP"
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
TMP=$(realpath "$TMP")
# expect_fail NAME PATTERN CMD...: exit code 1 and the last line of stderr matches PATTERN.
expect_fail() {
  local name=$1 pat=$2
  shift 2
  local err rc
  err=$(timeout 120 "$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -eq 1 ] && tail -n1 <<<"$err" | grep -qE -- "$pat"; then
    ok "$name"
  else
    bad "$name (rc=$rc, last stderr line: $(tail -n1 <<<"$err"))"
  fi
}
no_tmp_files() { [ -z "$(find "$1" -name '*.tmp' 2>/dev/null)" ]; }
digest() { find "$1" -type f -print0 | sort -z | xargs -0 sha256sum; }

# A world-readable copy of the binary and a small prepared data set (the checkout itself may
# sit under a folder other users cannot enter).
WORLD=$(mktemp -d /tmp/nanotrain-faults.XXXXXX)
trap 'chmod -R u+w "$WORLD" 2>/dev/null; rm -rf "$WORLD"' EXIT
chmod 755 "$WORLD"
cp "$NT" "$WORLD/nanotrain"
NT=$WORLD/nanotrain
mkdir -p "$WORLD/in"
for i in $(seq 1 40); do
  printf 'Document %d. It was the best of times, it was the worst of times, it was the age of wisdom.\n' "$i" \
    >"$WORLD/in/d$i.txt"
done
"$NT" data prepare --input "$WORLD/in" --out "$WORLD/data" --quiet >/dev/null
TRAIN=(train --data "$WORLD/data" --preset tiny --sample-tokens 0 --eval-tokens 256 --threads 1 --quiet)
chmod -R a+rX "$WORLD"

# ---- Read-only folders, as user nobody.
if [ "${NT_INSIDE_USERNS:-}" = 1 ]; then
  :  # the second pass, inside a user namespace, only does the disk part
elif [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  AS_NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  RO=$WORLD/readonly
  mkdir -p "$RO" && chmod 755 "$RO"  # owned by root: nobody may read but not create
  expect_fail "train into a read-only folder" "$RO/run.*(not writable|Permission denied)" \
    "${AS_NOBODY[@]}" "$NT" "${TRAIN[@]}" --steps 2 --run-dir "$RO/run"
  check "nothing was created there" "[ -z \"\$(ls -A '$RO')\" ]"
  # A finished run (made by root) resumed by a user who cannot write it.
  "$NT" "${TRAIN[@]}" --steps 2 --save-every 1 --run-dir "$RO/done" >/dev/null
  chmod -R a+rX,go-w "$RO/done"
  before=$(digest "$RO/done")
  expect_fail "resume a read-only run" "$RO/done.*(not writable|Permission denied)" \
    "${AS_NOBODY[@]}" "$NT" train --resume "$RO/done" --quiet
  check "the read-only run is unchanged" "[ \"\$(digest '$RO/done')\" = \"\$before\" ]"
  expect_fail "data prepare into a read-only folder" "$RO/data.*(not writable|Permission denied)" \
    "${AS_NOBODY[@]}" "$NT" data prepare --input "$WORLD/in" --out "$RO/data" --quiet
  expect_fail "tokenizer train into a read-only folder" "$RO/tok.*(cannot write|Permission denied)" \
    "${AS_NOBODY[@]}" "$NT" tokenizer train --input "$WORLD/in" --vocab-size 300 --out "$RO/tok.tiktoken"
else
  skip "read-only folders (needs root to run as user nobody with setpriv)"
fi

# ---- A full disk: a 1 MiB and a 2 MiB tmpfs. A checkpoint of the tiny model is about 1.2 MB.
MNT=$WORLD/disk
mkdir -p "$MNT"
mount_small() {  # mount_small SIZE
  umount "$MNT" 2>/dev/null
  mount -t tmpfs -o "size=$1" nanotrain-test "$MNT" 2>/dev/null
}
if [ "${NT_INSIDE_USERNS:-}" = 1 ] || { [ "$(id -u)" -eq 0 ] && mount_small 1m; }; then
  mount_small 1m
  expect_fail "disk full at the first checkpoint" "step-00000001.safetensors.*No space left on device" \
    "$NT" "${TRAIN[@]}" --steps 3 --save-every 1 --run-dir "$MNT/run"
  check "no temporary file is left (1 MiB)" "no_tmp_files '$MNT'"
  check "config.json is whole" "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' '$MNT/run/config.json'"

  mount_small 2m
  expect_fail "disk full at a later checkpoint" "step-00000002.safetensors.*No space left on device" \
    "$NT" "${TRAIN[@]}" --steps 3 --save-every 1 --keep-checkpoints 3 --run-dir "$MNT/run"
  check "no temporary file is left (2 MiB)" "no_tmp_files '$MNT'"
  check "the first checkpoint is kept" "[ -f '$MNT/run/checkpoints/step-00000001.safetensors' ]"
  # The survivors are good: with room again, the run resumes from step 1 without skipping any.
  cp -r "$MNT/run" "$WORLD/roomy"
  umount "$MNT"
  out=$("$NT" train --resume "$WORLD/roomy" 2>&1)
  check "the run resumes from the first checkpoint and finishes" \
    "[ \$? -eq 0 ] && grep -q 'resumed from .*step-00000001' <<<\"\$out\" && ! grep -q skipping <<<\"\$out\" && [ -f '$WORLD/roomy/summary.json' ]"
elif [ "${NT_INSIDE_USERNS:-}" != 1 ] && command -v unshare >/dev/null &&
     unshare --user --map-root-user --mount true 2>/dev/null; then
  # Not allowed to mount here: do the disk part again inside a user namespace, where we may.
  NT_INSIDE_USERNS=1 unshare --user --map-root-user --mount bash "$0" "$1" "$TMP/userns"
  rc=$?
  [ $rc -eq 0 ] && ok "disk-full checks (in a user namespace)" || bad "disk-full checks (in a user namespace)"
else
  skip "disk full (cannot mount a tmpfs: needs root or user namespaces)"
fi

finish
