#!/usr/bin/env bash
# Two machines on one: two network namespaces joined by a veth pair, each with a host name of
# its own, and mpirun between them over TCP (its remote shell enters the other namespace where
# it would ssh to the other machine). 20 fp32 steps over the two "hosts" give the 1-process losses
# within 1e-6 relative; the summary names each rank's host and its communication; a 1-process
# checkpoint resumed over the two hosts continues as the uninterrupted run did.
# NT_HOSTS_BENCH=1 also measures the link between the hosts (WORK_DIR/comm.json, for
# bench/scaleup.py) and trains depth 6 in bf16 for 60 s over the two hosts (one thread each) and in
# one process (two threads), printing tokens/s and the communication share of each.
# Needs a build with MPI, root (namespaces), ip, unshare and mpirun; skipped (77) naming what is
# missing.
# usage: mpi_hosts_test.sh NANOTRAIN WORK_DIR
set -u
NT=$1 TMP=$2
rm -rf "$TMP" && mkdir -p "$TMP"
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/mpi_lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "skip: network namespaces need root"; exit 77; }
for tool in ip unshare mpirun; do command -v $tool >/dev/null || { echo "skip: no $tool"; exit 77; }; done

# The two hosts: namespaces nt<pid>a and nt<pid>b, addresses 10.77.0.1 and .2 (private to them).
A=nt$$a B=nt$$b NET=10.77.0
cleanup() { ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null; }
trap cleanup EXIT
if ! { ip netns add "$A" && ip netns add "$B" && ip link add "v$A" type veth peer name "v$B" &&
       ip link set "v$A" netns "$A" && ip link set "v$B" netns "$B" &&
       ip -n "$A" addr add $NET.1/24 dev "v$A" && ip -n "$B" addr add $NET.2/24 dev "v$B" &&
       ip -n "$A" link set "v$A" up && ip -n "$B" link set "v$B" up &&
       ip -n "$A" link set lo up && ip -n "$B" link set lo up; } 2>"$TMP/netns.err"; then
  echo "skip: cannot create network namespaces here ($(head -1 "$TMP/netns.err"))"
  exit 77
fi
# in_host NAME NAMESPACE CMD...: CMD on that "host" (its network, its host name; where the
# machine has two cores or more, host a's processes on the first core and host b's on the
# second, as two machines' would not share one: each rank pins its threads to its first core).
read -r c0 c1 _ < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), "")')
cat >"$TMP/in_host.sh" <<EOF
#!/bin/sh
name=\$1 ns=\$2
shift 2
pin=""
if [ -n "$c1" ] && command -v taskset >/dev/null; then
  if [ "\$name" = nt-host-b ]; then pin="taskset -c $c1"; else pin="taskset -c $c0"; fi
fi
exec \$pin ip netns exec "\$ns" unshare --uts -- sh -c 'hostname "\$0" && exec "\$@"' "\$name" "\$@"
EOF
# mpirun's remote shell (plm_rsh_agent), called as `agent HOST COMMAND...` in place of ssh.
cat >"$TMP/agent.sh" <<EOF
#!/bin/sh
host=\$1
shift
case \$host in
  $NET.1) exec "$TMP/in_host.sh" nt-host-a "$A" sh -c "\$*" ;;
  $NET.2) exec "$TMP/in_host.sh" nt-host-b "$B" sh -c "\$*" ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
EOF
chmod +x "$TMP/in_host.sh" "$TMP/agent.sh"
printf '%s slots=1\n%s slots=1\n' $NET.1 $NET.2 >"$TMP/hosts"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One rank a host, over TCP on the veth pair only (no shared memory between the "hosts").
TWO_HOSTS=("$TMP/in_host.sh" nt-host-a "$A" mpirun --hostfile "$TMP/hosts" -np 2 --map-by node --bind-to none
           --mca plm_rsh_agent "$TMP/agent.sh" --mca btl tcp,self --mca btl_tcp_if_include $NET.0/24
           --mca oob_tcp_if_include $NET.0/24)
timeout 60 "${TWO_HOSTS[@]}" hostname >"$TMP/hostnames" 2>&1
check "mpirun starts one process on each namespace host" \
  "[ \"\$(sort '$TMP/hostnames' | tr '\n' ' ')\" = 'nt-host-a nt-host-b ' ]" ||
  { cat "$TMP/hostnames"; finish; }

"$NT" data prepare --input /usr/share/common-licenses --out "$TMP/data" >/dev/null
BASE=(--data "$TMP/data" --preset tiny --dtype fp32 --threads 1 --batch-size 2 --total-batch-tokens 768
      --sample-tokens 0 --keep-checkpoints 5)

"$NT" train "${BASE[@]}" --steps 20 --save-every 10 --run-dir "$TMP/one" >/dev/null 2>&1
timeout 300 "${TWO_HOSTS[@]}" "$NT" train "${BASE[@]}" --steps 20 --save-every 10 --run-dir "$TMP/two" \
  >"$TMP/two.out" 2>&1
rc=$?
d=$(max_rel "$TMP/one" "$TMP/two")
echo "1 process vs 2 hosts: largest relative loss difference over 20 steps: $d"
check "2 hosts train 20 steps (exit $rc)" "[ $rc -eq 0 ] && [ \$(losses '$TMP/two' | wc -l) -eq 20 ]"
check "2 hosts give the 1-process losses within 1e-6 relative ($d)" "close '$d'"
hosts=$(python3 -c 'import json,sys; s = json.load(open(sys.argv[1] + "/summary.json"))
print(" ".join(r["host"] for r in s["ranks"]), all(r["comm_seconds"] > 0 for r in s["ranks"]))' "$TMP/two" 2>&1)
check "the summary names each rank's host and its communication time ($hosts)" \
  "[ '$hosts' = 'nt-host-a nt-host-b True' ]"

# The 1-process run cut back to its step-10 checkpoint, resumed over the two hosts.
cp -r "$TMP/one" "$TMP/resumed" &&
  rm -f "$TMP/resumed/.lock" "$TMP/resumed/checkpoints/step-00000020.safetensors" "$TMP/resumed/summary.json" \
    "$TMP/resumed/model.safetensors"
timeout 300 "${TWO_HOSTS[@]}" "$NT" train --resume "$TMP/resumed" --threads 1 >"$TMP/resumed.out" 2>&1
rc=$?
d=$(max_rel "$TMP/one" "$TMP/resumed")
check "a 1-process checkpoint resumed over 2 hosts continues within 1e-6 relative (exit $rc, $d)" \
  "[ $rc -eq 0 ] && close '$d'"

if [ "${NT_HOSTS_BENCH:-0}" = 1 ]; then
  # The link over TCP between the two hosts (for bench/scaleup.py): WORK_DIR/comm.json.
  "${TWO_HOSTS[@]}" "$NT" bench --no-kernels --no-steps --threads 1 --json "$TMP/comm.json" 2>&1 | grep -A3 '^communication'
  D6=(--data "${NT_BENCH_DATA:-$TMP/data}" --preset cpu --depth 6 --dtype bf16 --total-batch-tokens 8192
      --time-budget 60s --eval-tokens 8192 --sample-tokens 0 --save-every 0)
  "$NT" train "${D6[@]}" --threads 2 --run-dir "$TMP/bench_one" >/dev/null 2>&1
  "${TWO_HOSTS[@]}" "$NT" train "${D6[@]}" --threads 1 --run-dir "$TMP/bench_two" >/dev/null 2>&1
  python3 - "$TMP/bench_one" "$TMP/bench_two" <<'PY'
import json, sys
for name, d in (("1 process x 2 threads", sys.argv[1]), ("2 hosts x 1 thread", sys.argv[2])):
    s = json.load(open(d + "/summary.json"))
    print(f"{name}: {s['tokens_per_second']:,.0f} tokens/s, communication {100 * s.get('comm_share', 0):.1f} % "
          f"of rank 0's step time")
PY
fi
finish
