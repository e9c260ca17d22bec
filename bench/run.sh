#!/usr/bin/env bash
# Runs every core benchmark of bench/RESULTS-core.md on a fresh redis-server
# on loopback, distsem side by side with the seed's design in the same run.
#
#   bench/run.sh                   # 3 repetitions of 5 s runs
#   REPS=5 DURATION=10s bench/run.sh
#   OUT=/tmp/x bench/run.sh        # where results go (default: a temp dir)
#   ONLY="util burst" bench/run.sh # a subset of: util procs uncontended burst handoff reference evalsha local
#
# It picks a free port in 6430-6439, starts redis-server there without
# persistence, and stops it by its PID on exit. Output: $OUT/results.jsonl
# (one line per run), $OUT/runs.txt (every report), $OUT/evalsha.csv,
# $OUT/local-bench.txt and $OUT/summary.md (median and range per workload).
set -euo pipefail

cd "$(dirname "$0")/.."
REPS=${REPS:-3}
DURATION=${DURATION:-5s}
OUT=${OUT:-$(mktemp -d /tmp/distsem-bench.XXXXXX)}
ONLY=${ONLY:-"util procs uncontended burst handoff reference evalsha local"}
mkdir -p "$OUT"
D=$(mktemp -d /tmp/distsem-redis.XXXXXX)

want() { [[ " $ONLY " == *" $1 "* ]]; }

PORT=""
for p in $(seq 6430 6439); do
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		PORT=$p
		break
	fi
done
[ -n "$PORT" ] || { echo "no free port in 6430-6439" >&2; exit 1; }

redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
	--daemonize yes --dir "$D" --pidfile "$D/redis.pid" --logfile "$D/redis.log"
stop() {
	if [ -s "$D/redis.pid" ]; then
		kill "$(cat "$D/redis.pid")" 2>/dev/null || true
	fi
}
trap stop EXIT
for _ in $(seq 500); do
	redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && break
	sleep 0.01
done
redis-cli -p "$PORT" ping | grep -q PONG
ADDR=127.0.0.1:$PORT
echo "redis-server $(redis-server --version | awk '{print $3}') pid $(cat "$D/redis.pid") on $ADDR; results in $OUT"

{
	echo "# machine"
	echo "nproc: $(nproc)"
	lscpu | head -20
	go version
	date -u
} >"$OUT/machine.txt"

# One build, then the binary (the same code `go run ./bench/load` runs).
go build -o "$D/load" ./bench/load
LOAD=("$D/load" -redis "$ADDR" -redis-pid "$(cat "$D/redis.pid")" -duration "$DURATION" -results "$OUT/results.jsonl")

run() { # label backend flags...
	local label=$1 backend=$2
	shift 2
	"${LOAD[@]}" -label "$label" -backend "$backend" -rep "$rep" "$@" 2>&1 | tee -a "$OUT/runs.txt"
}

SHA=$(redis-cli -p "$PORT" script load "return 1")
for rep in $(seq "$REPS"); do
	echo "---- repetition $rep"
	for b in distsem seed; do
		if want util; then
			run util-4p "$b" -limit 4 -procs 4 -workers 32 -hold 2ms
		fi
		if want procs; then
			run util-2p "$b" -limit 4 -procs 2 -workers 32 -hold 2ms
			run util-1p "$b" -limit 4 -procs 1 -workers 32 -hold 2ms
		fi
		if want uncontended; then
			run uncontended "$b" -limit 1 -procs 1 -workers 1 -hold 0
		fi
		if want burst; then
			run burst "$b" -limit 8 -procs 4 -workers 128 -hold 0
		fi
		if want handoff; then
			run handoff-limit1 "$b" -limit 1 -procs 4 -workers 8 -hold 1ms
		fi
	done
	if want reference; then
		run util-1p xsync -limit 4 -procs 1 -workers 32 -hold 2ms
		run util-1p local -limit 4 -procs 1 -workers 32 -hold 2ms
	fi
	if want evalsha; then
		for c in 1 50; do
			printf 'rep %s clients %s: ' "$rep" "$c" >>"$OUT/evalsha.csv"
			redis-benchmark -h 127.0.0.1 -p "$PORT" -n 100000 -c "$c" --csv evalsha "$SHA" 0 |
				grep -v '^"test"' | tr -d '\r' >>"$OUT/evalsha.csv"
		done
		tail -n 2 "$OUT/evalsha.csv"
	fi
done

if want local; then
	go test -run '^$' -bench . -benchmem -count 5 ./bench/local/ | tee "$OUT/local-bench.txt"
fi
if [ -s "$OUT/results.jsonl" ]; then
	"$D/load" summarize "$OUT/results.jsonl" | tee "$OUT/summary.md"
fi
echo "results in $OUT"
