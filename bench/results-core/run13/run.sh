#!/bin/bash
# Run 13 (bench/RESULTS.md §7): old (25adde2) / new / seed interleaved, on one redis-server.
# Build: (cd <tree at 25adde2>/bench && go build -o /tmp/load_o3 ./load); (cd bench && go build -o /tmp/load_n3 ./load)
set -eu
redis-server --port 6434 --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile /tmp/r6434.pid >/dev/null; sleep 0.5; PID=$(cat /tmp/r6434.pid)
run() { # series reps duration workloads...
  local out=$1 reps=$2 d=$3; shift 3
  for rep in $(seq $reps); do for w in "$@"; do for v in old new seed; do
    bin=/tmp/load_n3; b=distsem; [ $v = old ] && bin=/tmp/load_o3; [ $v = seed ] && b=seed
    case $w in
      uncontended) args="-limit 1 -procs 1 -workers 1 -hold 0" ;;
      burst) args="-limit 8 -procs 4 -workers 128 -hold 0" ;;
      util-4p) args="-limit 4 -procs 4 -workers 32 -hold 2ms" ;;
      util-l1) args="-limit 1 -procs 4 -workers 16 -hold 1ms" ;;
    esac
    $bin -duration $d -results $out -redis 127.0.0.1:6434 -redis-pid $PID -label "$w-$v" -backend $b -rep $rep $args >/dev/null 2>&1
  done; done; done
}
run ab3.jsonl 7 4s uncontended burst
run util3.jsonl 3 5s util-4p util-l1
kill $PID
