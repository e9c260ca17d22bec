#!/bin/bash
# Idle A/B: old (main before the change) vs new vs seed, interleaved.
# usage: ab.sh OLD_COMMIT NEW_TREE OUTDIR [REPS]
set -eu
OLD=$1; NEW=$2; OUT=$3; REPS=${4:-3}
mkdir -p "$OUT"
rm -rf /tmp/ab_old && git -C /work/main worktree add -q --detach /tmp/ab_old "$OLD"
(cd /tmp/ab_old/bench && go build -o "$OUT/load_old" ./load)
(cd "$NEW/bench" && go build -o "$OUT/load_new" ./load)
git -C /work/main worktree remove --force /tmp/ab_old
PORT=6431
redis-server --port $PORT --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile "$OUT/redis.pid" >/dev/null
sleep 0.5
PID=$(cat "$OUT/redis.pid")
redis-cli -p $PORT info server | grep redis_version
declare -A W=(
  [uncontended]="-limit 1 -procs 1 -workers 1 -hold 0"
  [burst]="-limit 8 -procs 4 -workers 128 -hold 0"
  [util-4p]="-limit 4 -procs 4 -workers 32 -hold 2ms"
  [util-l1]="-limit 1 -procs 4 -workers 16 -hold 1ms"
  [handoff-limit1]="-limit 1 -procs 4 -workers 8 -hold 1ms"
)
for rep in $(seq $REPS); do
  for w in uncontended burst util-4p util-l1 handoff-limit1; do
    for v in old new seed; do
      bin=$OUT/load_new; b=distsem
      [ $v = old ] && bin=$OUT/load_old
      [ $v = seed ] && b=seed
      echo "== rep $rep $w $v"
      $bin -duration 5s -results "$OUT/ab.jsonl" -redis 127.0.0.1:$PORT -redis-pid $PID -label "$w-$v" -backend $b -rep $rep ${W[$w]} 2>&1 | grep -E "throughput|cpu|p99/p50|jain" | tee -a "$OUT/ab.log"
    done
  done
done
kill $PID
"$OUT/load_new" summarize "$OUT/ab.jsonl" | tee "$OUT/summary.txt"
