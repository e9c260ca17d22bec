#!/bin/bash
# The tombstones a busy semaphore keeps (bench/RESULTS.md §7, run 14): the
# zero-hold burst workload on a fresh redis-server, and, 5 s into its 8 s,
# the size of each of the semaphore's keys. Run it from anywhere:
#   bench/results-core/run14/tombstones.sh > tombstones.txt
set -eu
cd "$(dirname "$0")/../.." # bench
PORT=${PORT:-6436}
tmp=$(mktemp -d)
go build -o "$tmp/load" ./load
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" >/dev/null
sleep 0.5
trap 'kill $(cat "$tmp/redis.pid"); rm -rf "$tmp"' EXIT
"$tmp/load" -backend distsem -limit 8 -procs 4 -workers 128 -hold 0 -duration 8s -name tomb -redis "127.0.0.1:$PORT" > "$tmp/load.out" 2>&1 &
sleep 5
for k in $(redis-cli -p "$PORT" --scan --pattern '*tomb*' | sort); do
  case $(redis-cli -p "$PORT" TYPE "$k") in
  hash) n="$(redis-cli -p "$PORT" HLEN "$k") fields" ;;
  zset) n="$(redis-cli -p "$PORT" ZCARD "$k") members" ;;
  *) n="" ;;
  esac
  echo "$k: $n, $(redis-cli -p "$PORT" MEMORY USAGE "$k" SAMPLES 0) bytes"
done
redis-cli -p "$PORT" INFO memory | grep '^used_memory:'
wait
grep '^window' "$tmp/load.out"
