#!/bin/bash
# The leased mode against the default mode, interleaved: the load driver
# (bench/load) runs each workload of BENCHMARKS.md's "Leased shares on
# demand" with the leased mode of the checked-out tree, the default mode
# (redissem.New) of the same tree and, with OLD, the leased mode of commit
# OLD, one after the other in each round, the order rotating by round, on
# one redis-server that it starts and stops by PID. The load average is
# recorded before and after each run (runs.txt). Then it prints the
# summary (median and range per workload; throughput over the default
# mode's, paired by round). Run from anywhere:
#   bench/leased/run.sh                    # 3 rounds, about 6 minutes with OLD
#   OLD=e356e77 ROUNDS=3 OUT=/tmp/l bench/leased/run.sh
# PIN=1 runs redis-server on CPU 0 and the load processes on CPU 1
# (taskset), so that they do not take each other's core.
# Workloads (4 processes, 4 s each): l1 limit 1, 16 goroutines, holds of
# 1 ms; l4 limit 4, 32 goroutines, 2 ms; burst limit 8, 128 goroutines, no
# hold; s10 ... s10000 limit 1, 32 goroutines, no hold, each acquire on
# one of N semaphores.
set -eu
cd "$(dirname "$0")/.." # bench
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-7494}
OLD=${OLD:-}
PIN=${PIN:-}
pin_redis=() pin_load=()
if [ -n "$PIN" ]; then pin_redis=(taskset -c 0) pin_load=(taskset -c 1); fi
WORKLOADS=${WORKLOADS:-"l1 l4 burst s10 s100 s1000 s10000"}
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  echo "port $PORT is in use: set PORT" >&2
  exit 1
fi
OUT=${OUT:-$(mktemp -d /tmp/distsem-leased.XXXXXX)}
mkdir -p "$OUT"
tmp=$(mktemp -d)
go build -o "$tmp/load_new" ./load
if [ -n "$OLD" ]; then
  git worktree add -q --detach "$tmp/old" "$OLD"
  (cd "$tmp/old/bench" && go build -o "$tmp/load_old" ./load)
  git worktree remove --force "$tmp/old"
fi
"${pin_redis[@]}" redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" >/dev/null
for _ in $(seq 50); do [ -s "$tmp/redis.pid" ] && redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
PID=$(cat "$tmp/redis.pid")
trap 'kill $PID; rm -rf "$tmp"' EXIT
{ echo "new: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- ../core || echo ' (with uncommitted changes)')  old: ${OLD:-none}  pinned: ${PIN:-no}"
  uname -srm; grep -m1 'model name' /proc/cpuinfo; nproc; redis-server --version; go version; } > "$OUT/machine.txt"
run() { # label binary backend args...
  local label=$1 bin=$2 be=$3
  shift 3
  echo "== $label $(cat /proc/loadavg)" >> "$OUT/runs.txt"
  "${pin_load[@]}" "$tmp/$bin" -backend "$be" -redis "127.0.0.1:$PORT" -redis-pid "$PID" -duration 4s -label "$label" -rep "$rep" \
    -results "$OUT/results.jsonl" "$@" >> "$OUT/runs.txt" 2>&1
  echo "   after $(cat /proc/loadavg)" >> "$OUT/runs.txt"
}
for rep in $(seq "$ROUNDS"); do
  for w in $WORKLOADS; do
    case $w in
      l1) a="-limit 1 -procs 4 -workers 16 -hold 1ms" ;;
      l4) a="-limit 4 -procs 4 -workers 32 -hold 2ms" ;;
      burst) a="-limit 8 -procs 4 -workers 128 -hold 0" ;;
      s*) a="-limit 1 -procs 4 -workers 32 -hold 0 -sems ${w#s}" ;;
      *) echo "unknown workload $w" >&2; exit 1 ;;
    esac
    case $((rep % 3)) in
      1) order="new old def" ;;
      2) order="old def new" ;;
      0) order="def new old" ;;
    esac
    for v in $order; do
      # shellcheck disable=SC2086
      case $v in
        new) run "$w-leased" load_new leased $a ;;
        old) if [ -n "$OLD" ]; then run "$w-leasedold" load_old leased $a; fi ;;
        def) run "$w-distsem" load_new distsem $a ;;
      esac
    done
  done
done
go run ./load summarize -base distsem "$OUT/results.jsonl" | tee "$OUT/summary.md"
echo "output in $OUT"
