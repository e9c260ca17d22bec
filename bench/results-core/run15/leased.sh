#!/bin/bash
# Run 15's check of issue 11 §2 on this session's host (bench/RESULTS.md §7):
# the default mode and the leased mode alternated 3 times, limit 4, 4
# processes x 8 goroutines, 2 ms holds, on a redis-server of its own.
#   bench/results-core/run15/leased.sh      # about 40 s
set -eu
cd "$(dirname "$0")/../.." # bench
OUT=${OUT:-$PWD/results-core/run15}
PORT=${PORT:-6436}
tmp=$(mktemp -d)
rm -f "$OUT/leased.jsonl"
go build -o "$tmp/load" ./load
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" >/dev/null
sleep 0.5
PID=$(cat "$tmp/redis.pid")
trap 'kill $PID; rm -rf "$tmp"' EXIT
for rep in 1 2 3; do for b in distsem leased; do
  "$tmp/load" -duration 5s -results "$OUT/leased.jsonl" -redis "127.0.0.1:$PORT" -redis-pid "$PID" \
    -label "util4-$b" -backend "$b" -rep "$rep" -limit 4 -procs 4 -workers 32 -hold 2ms > /dev/null
done; done
"$tmp/load" summarize "$OUT/leased.jsonl"
