#!/bin/bash
# Compares distsem at two commits on one redis-server: the load driver
# (bench/load, backend distsem) of OLD and of the checked-out tree, run
# interleaved, repetition by repetition, so that both see the same machine.
# Workloads: the uncontended acquire/release pair rate (1 process, 1
# worker, no hold), the zero-hold burst (4 processes x 128 workers, limit
# 8), and the hand-off utilization (limit 4, 4 processes x 8, 2 ms holds).
# Prints the summary (median and range per workload, and new / old paired
# by repetition). Run it on an idle machine, from anywhere:
#   OLD=9b2ab16 bench/ab/run.sh             # about 6 minutes
#   OLD=9b2ab16 REPS=7 OUT=/tmp/ab bench/ab/run.sh
# OLD_FLAGS and NEW_FLAGS add load driver flags to one side, and REPLICA=1
# gives the redis-server a replica (on PORT+1), so that one commit can be
# compared with itself under two settings, e.g. the cost of waiting for a
# replica:
#   OLD=HEAD REPLICA=1 NEW_FLAGS='-replica-ack 1' bench/ab/run.sh
#   OLD=9b2ab16 NEW_FLAGS='-flows 16' bench/ab/run.sh   # every acquire names one of 16 flows
# The load average is recorded before and after each run (load.txt).
set -eu
cd "$(dirname "$0")/.." # bench
OLD=${OLD:?OLD must name the commit to compare with}
REPS=${REPS:-5}
PORT=${PORT:-7484}
REPLICA=${REPLICA:-}
OLD_FLAGS=${OLD_FLAGS:-}
NEW_FLAGS=${NEW_FLAGS:-}
for p in $PORT ${REPLICA:+$((PORT + 1))}; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "port $p is in use: set PORT" >&2
    exit 1
  fi
done
OUT=${OUT:-$(mktemp -d /tmp/distsem-ab.XXXXXX)}
if [ -e "$OUT/ab.jsonl" ]; then
  # The summary reads every line of ab.jsonl: an earlier run's would mix in.
  echo "$OUT already holds a run (ab.jsonl): choose another OUT" >&2
  exit 1
fi
mkdir -p "$OUT"
tmp=$(mktemp -d)
git worktree add -q --detach "$tmp/old" "$OLD"
(cd "$tmp/old/bench" && go build -o "$tmp/load_old" ./load)
git worktree remove --force "$tmp/old"
go build -o "$tmp/load_new" ./load
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" \
  --repl-diskless-sync-delay 0 >/dev/null
for _ in $(seq 50); do [ -s "$tmp/redis.pid" ] && redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
PID=$(cat "$tmp/redis.pid")
RPID=
if [ -n "$REPLICA" ]; then
  redis-server --port $((PORT + 1)) --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile "$tmp/replica.pid" --replicaof 127.0.0.1 "$PORT" >/dev/null
  # Until a write is acknowledged: the first ones after the sync may not be.
  for _ in $(seq 100); do
    printf 'SET ab-ready 1\nWAIT 1 100\n' | redis-cli -p "$PORT" 2>/dev/null | tail -1 | grep -qx 1 && break; sleep 0.1
  done
  RPID=$(cat "$tmp/replica.pid")
fi
trap 'kill $PID $RPID; rm -rf "$tmp"' EXIT
{ echo "old: $(git rev-parse --short "$OLD")  new: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- ../core || echo ' (with uncommitted changes)')"
  uname -srm; grep -m1 'model name' /proc/cpuinfo; nproc; redis-server --version; go version
  echo "replica: ${REPLICA:-none}  old flags: ${OLD_FLAGS:-none}  new flags: ${NEW_FLAGS:-none}"; } > "$OUT/machine.txt"
for rep in $(seq "$REPS"); do
  for w in uncontended burst util-4p; do
    case $w in
      uncontended) args="-limit 1 -procs 1 -workers 1 -hold 0" d=4s ;;
      burst) args="-limit 8 -procs 4 -workers 128 -hold 0" d=4s ;;
      util-4p) args="-limit 4 -procs 4 -workers 32 -hold 2ms" d=5s ;;
    esac
    for v in old new; do
      extra=$OLD_FLAGS
      [ $v = new ] && extra=$NEW_FLAGS
      echo "$rep $w-$v before: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"
      "$tmp/load_$v" -duration "$d" -results "$OUT/ab.jsonl" -redis "127.0.0.1:$PORT" -redis-pid "$PID" \
        -label "$w-$v" -backend distsem -rep "$rep" $args $extra > "$tmp/last.txt" 2>&1 || cat "$tmp/last.txt"
      echo "$rep $w-$v after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"
    done
  done
done
"$tmp/load_new" summarize -base old "$OUT/ab.jsonl" > "$OUT/summary.md"
cat "$OUT/machine.txt" "$OUT/summary.md" "$OUT/load.txt"
echo "data: $OUT"
