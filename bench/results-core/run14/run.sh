#!/bin/bash
# Run 14 (bench/RESULTS.md §7): distsem before its scripts' fast paths (OLD,
# default 538443e), with them (the checked-out tree), the seed and the
# reference design (bench/refsem), interleaved on one redis-server; then the
# scripts' server time (bench/luacost) and this machine's hand-off floor
# (bench/hopfloor). Run it on an idle machine, from anywhere:
#   bench/results-core/run14/run.sh            # about 12 minutes
#   REPS=3 UREPS=3 bench/results-core/run14/run.sh
set -eu
cd "$(dirname "$0")/../.." # bench
OUT=${OUT:-$PWD/results-core/run14}
OLD=${OLD:-538443e}
REPS=${REPS:-7}   # uncontended and burst
UREPS=${UREPS:-5} # utilization
PORT=${PORT:-6435}
tmp=$(mktemp -d)
git worktree add -q --detach "$tmp/old" HEAD
git -C "$tmp/old" checkout -q "$OLD" -- core
(cd "$tmp/old/bench" && go build -o "$tmp/load_old" ./load)
git worktree remove --force "$tmp/old"
go build -o "$tmp/load_new" ./load
go build -o "$tmp/hopfloor" ./hopfloor
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" >/dev/null
sleep 0.5
PID=$(cat "$tmp/redis.pid")
trap 'kill $PID; rm -rf "$tmp"' EXIT
mkdir -p "$OUT"
run() { # out reps duration workloads...
  local out=$1 reps=$2 d=$3; shift 3
  for rep in $(seq "$reps"); do for w in "$@"; do for v in old new seed ref; do
    bin=$tmp/load_new; b=$v
    case $v in old) bin=$tmp/load_old; b=distsem ;; new) b=distsem ;; esac
    case $w in
      uncontended) args="-limit 1 -procs 1 -workers 1 -hold 0" ;;
      burst) args="-limit 8 -procs 4 -workers 128 -hold 0" ;;
      util-4p) args="-limit 4 -procs 4 -workers 32 -hold 2ms" ;;
      util-l1) args="-limit 1 -procs 4 -workers 16 -hold 1ms" ;;
    esac
    "$bin" -duration "$d" -results "$out" -redis "127.0.0.1:$PORT" -redis-pid "$PID" -label "$w-$v" -backend "$b" -rep "$rep" $args > "$tmp/last.txt" 2>&1 || cat "$tmp/last.txt"
  done; done; done
}
run "$OUT/ab.jsonl" "$REPS" 4s uncontended burst
run "$OUT/util.jsonl" "$UREPS" 5s util-4p util-l1
for w in 0 3000; do "$tmp/hopfloor" -addr "127.0.0.1:$PORT" -work $w; done > "$OUT/hopfloor.txt"
(cd luacost && ROUNDS=15 N=2000 OUT="$tmp/luacost" ./run.sh) > "$OUT/luacost.txt" 2>&1
"$tmp/load_new" summarize "$OUT/ab.jsonl" "$OUT/util.jsonl" > "$OUT/summary.md"
echo "done: $OUT"
