#!/usr/bin/env bash
# Runs the multi-process benchmarks of BENCHMARKS.md on fresh redis-servers
# on loopback, every backend of a part side by side in the same run.
#
#   bench/run.sh                        # everything (core parts, then peers and growth curves)
#   ONLY="util burst" bench/run.sh      # a subset of the parts below
#   SCALE=small bench/run.sh            # shorter runs and fewer points
#   REPS=5 DURATION=10s OUT=/tmp/x bench/run.sh   # REPS: core parts; GREPS (default 1): growth parts
#
# Parts. Core (distsem's default mode and its leased mode beside bench/seedsem,
# the ZSET + BRPOP design; CORE sets the backends):
#   util util1 procs uncontended burst handoff reference evalsha local
# Capacity (bench/capacity: the server CPU per operation and the model,
# then a load run that pushes the server as far as the machine allows):
#   capacity
# Peers and growth curves (distsem, its leased mode, bench/seedsem,
# go-redsync/redsync, bsm/redislock, and the in-process bound core.Local
# and x/sync; DIST sets the Redis backends):
#   peers          limit 1, 4 processes × 4, 1 ms holds; and 1 goroutine, hold 0
#   growth-procs   utilization and throughput, processes 1 → 16
#   growth-waiters wait time, waiters 10 → 10 000
#   growth-sems    throughput, distinct semaphores 1 → 10 000, and Redis memory per idle semaphore
#   cluster        aggregate throughput, 3-master Redis Cluster against one node
# and at the end `plots` (SVG files from $OUT/results.jsonl, bench/plot).
# Each part alone takes under 10 minutes on 2 cores (SCALE=full, REPS=1);
# README.md gives each part's time.
#
# It picks a free port among $PORTS (default 7460-7469) for redis-server
# (no persistence) and, for `cluster`, three among $CLUSTER_PORTS (default
# 7470-7479; each with its cluster bus on port+$BUS_OFFSET, default 10000),
# and stops every server by its PID on exit. Output in $OUT: results.jsonl (one line per run),
# runs.txt (every report), machine.txt, evalsha.csv, local-bench.txt,
# capacity.txt, summary.md (median and range per workload) and *.svg.
set -euo pipefail

cd "$(dirname "$0")" # the bench module
REPS=${REPS:-3}
SCALE=${SCALE:-full}
DURATION=${DURATION:-5s}
OUT=${OUT:-$(mktemp -d /tmp/distsem-bench.XXXXXX)}
CORE_PARTS="util util1 procs uncontended burst handoff reference evalsha local capacity"
GROWTH_PARTS="peers growth-procs growth-waiters growth-sems cluster"
ONLY=${ONLY:-"$CORE_PARTS $GROWTH_PARTS plots"}
PORTS=${PORTS:-$(seq 7460 7469)}
CLUSTER_PORTS=${CLUSTER_PORTS:-$(seq 7470 7479)}
BUS_OFFSET=${BUS_OFFSET:-10000}
# Backends of the core parts and of the growth parts (leased: redissem.NewLeased).
CORE=${CORE:-"distsem leased seedsem"}
DIST=${DIST:-"distsem leased seedsem redsync redislock"}
OUT=$(mkdir -p "$OUT" && cd "$OUT" && pwd)
D=$(mktemp -d /tmp/distsem-redis.XXXXXX)

want() { [[ " $ONLY " == *" $1 "* ]]; }
any_of() { for p in "$@"; do want "$p" && return 0; done; return 1; }

PIDFILES=()
stop() {
	for f in "${PIDFILES[@]}"; do
		[ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
	done
	sleep 0.2
	rm -rf "$D"
}
trap stop EXIT

free_port() { # free_port CANDIDATES...: the first one not listening, with its bus port free too
	for p in "$@"; do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + BUS_OFFSET))") 2>/dev/null; then
			case " ${TAKEN:-} " in *" $p "*) continue ;; esac
			TAKEN="${TAKEN:-} $p"
			echo "$p"
			return
		fi
	done
	return 1
}
start_redis() { # start_redis PORT DIR [args...]
	local port=$1 dir=$2
	shift 2
	mkdir -p "$dir"
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --maxclients 19000 \
		--daemonize yes --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" "$@"
	PIDFILES+=("$dir/redis.pid")
	for _ in $(seq 500); do
		[ -s "$dir/redis.pid" ] && redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && return
		sleep 0.01
	done
	echo "redis-server on $port did not start" >&2
	return 1
}

# shellcheck disable=SC2086
PORT=$(free_port $PORTS) || { echo "no free port in: $PORTS" >&2; exit 1; }
start_redis "$PORT" "$D/redis"
ADDR=127.0.0.1:$PORT
RPID=$(cat "$D/redis/redis.pid")
echo "redis-server $(redis-server --version | awk '{print $3}') pid $RPID on $ADDR; results in $OUT"

{
	echo "# machine"
	echo "nproc: $(nproc)"
	lscpu | head -20
	go version
	date -u
	echo "commit: $(git rev-parse HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "uptime at start: $(uptime)"
} >>"$OUT/machine.txt"

# One build, then the binary (the same code `go run ./load` runs).
go build -o "$D/load" ./load
LOAD=("$D/load" -duration "$DURATION" -results "$OUT/results.jsonl")

run() { # label backend flags... (on the standalone server unless flags say -cluster)
	local label=$1 backend=$2
	shift 2
	# A failed run (a peer's error, a limit violation) is reported and the
	# part goes on.
	"${LOAD[@]}" -redis "$ADDR" -redis-pid "$RPID" -label "$label" -backend "$backend" -rep "$rep" "$@" 2>&1 | tee -a "$OUT/runs.txt" ||
		echo "!! run failed: $label $backend $*" | tee -a "$OUT/runs.txt"
}

# ---- core: the backends of $CORE, interleaved in each repetition
SHA=$(redis-cli -p "$PORT" script load "return 1")
if any_of util util1 procs uncontended burst handoff reference evalsha; then
	for rep in $(seq "$REPS"); do
		echo "---- repetition $rep"
		for b in $CORE; do
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
			if want util1; then
				run util-l1 "$b" -limit 1 -procs 4 -workers 16 -hold 1ms
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
fi
if want local; then
	go test -run '^$' -bench . -benchmem -count 5 ./local/ | tee "$OUT/local-bench.txt"
fi

if want capacity; then
	# The server CPU per operation and the model (bench/capacity), then
	# the check: 4 processes × 32 goroutines on 10 000 semaphores, hold 0
	# (nearly every grant uncontended); the burst part is the check of the
	# hand-off figure.
	go run ./capacity -redis "$ADDR" | tee "$OUT/capacity.txt"
	for rep in $(seq "$REPS"); do
		run capacity-check distsem -limit 1 -procs 4 -workers 32 -hold 0 -sems 10000
	done
fi

# ---- peers and growth curves
# The points of each curve can be set: e.g. WAITERS=10000 for one point.
if [ "$SCALE" = small ]; then
	GD=2s WD=${WD:-3s} PROCS=${PROCS:-"1 2 4 8 16"} WAITERS=${WAITERS:-"10 100 1000"} SEMS=${SEMS:-"1 100 10000"} IDLE_N=${IDLE_N:-2000}
else
	GD=$DURATION WD=${WD:-10s} PROCS=${PROCS:-"1 2 4 8 16"} WAITERS=${WAITERS:-"10 100 1000 10000"} SEMS=${SEMS:-"1 10 100 1000 10000"} IDLE_N=${IDLE_N:-10000}
fi
# One repetition per point by default: each part then runs alone in under
# 10 minutes on 2 cores. GREPS=3 for medians of 3.
GREPS=${GREPS:-1}
for rep in $(seq "$GREPS"); do
	if want peers; then
		for b in $DIST; do
			run peers-l1 "$b" -duration "$GD" -limit 1 -procs 4 -workers 16 -hold 1ms
			run peers-uncontended "$b" -duration "$GD" -limit 1 -procs 1 -workers 1 -hold 0
		done
		for b in local xsync; do
			run peers-l1 "$b" -duration "$GD" -limit 1 -procs 1 -workers 16 -hold 1ms
			run peers-uncontended "$b" -duration "$GD" -limit 1 -procs 1 -workers 1 -hold 0
		done
	fi
	if want growth-procs; then
		# 4 goroutines per process, limit 1, 1 ms holds; the in-process
		# bound needs one process: its line is the 1-process figure.
		for p in $PROCS; do
			for b in $DIST; do
				run "growth-procs/p$p" "$b" -duration "$GD" -limit 1 -procs "$p" -workers $((4 * p)) -hold 1ms
			done
		done
		for b in local xsync; do
			run growth-procs/p1 "$b" -duration "$GD" -limit 1 -procs 1 -workers 4 -hold 1ms
		done
	fi
	if want growth-waiters; then
		# N goroutines over 4 processes wait for one permit held 1 ms.
		for n in $WAITERS; do
			for b in $DIST; do
				run "growth-waiters/n$n" "$b" -duration "$WD" -limit 1 -procs 4 -workers "$n" -hold 1ms
			done
			for b in local xsync; do
				run "growth-waiters/n$n" "$b" -duration "$WD" -limit 1 -procs 1 -workers "$n" -hold 1ms
			done
		done
	fi
	if want growth-sems; then
		# 32 goroutines over 4 processes, each acquire on one of N
		# semaphores picked at random, hold 0.
		for s in $SEMS; do
			for b in $DIST; do
				run "growth-sems/s$s" "$b" -duration "$GD" -limit 1 -procs 4 -workers 32 -hold 0 -sems "$s"
			done
		done
		if [ "$rep" = 1 ]; then
			for b in $DIST; do
				[ "$b" = leased ] && continue
				"$D/load" idlemem -backend "$b" -redis "$ADDR" -n "$IDLE_N" -results "$OUT/results.jsonl" | tee -a "$OUT/runs.txt"
			done
		fi
	fi
	if want cluster; then
		if [ -z "${CLUSTER_ADDRS:-}" ]; then
			CL=()
			for i in 1 2 3; do
				# shellcheck disable=SC2086
				p=$(free_port $CLUSTER_PORTS) || { echo "no free port in: $CLUSTER_PORTS" >&2; exit 1; }
				start_redis "$p" "$D/cluster$p" --cluster-enabled yes --cluster-port $((p + BUS_OFFSET)) \
					--cluster-config-file "$D/cluster$p/nodes.conf" --cluster-node-timeout 5000
				CL+=("127.0.0.1:$p")
			done
			redis-cli --cluster create "${CL[@]}" --cluster-replicas 0 --cluster-yes >/dev/null
			for _ in $(seq 400); do
				redis-cli -p "${CL[0]##*:}" cluster info | grep -q cluster_state:ok && break
				sleep 0.05
			done
			CLUSTER_ADDRS=$(IFS=,; echo "${CL[*]}")
		fi
		# 1 000 semaphores (spread over the slots), 32 goroutines over 4
		# processes, hold 0: one node, then the 3 masters.
		for b in $DIST; do
			run cluster-1node "$b" -duration "$GD" -limit 1 -procs 4 -workers 32 -hold 0 -sems 1000
			run cluster-3masters "$b" -duration "$GD" -limit 1 -procs 4 -workers 32 -hold 0 -sems 1000 -cluster "$CLUSTER_ADDRS"
		done
	fi
done

echo "uptime at end: $(uptime)" >>"$OUT/machine.txt"
if [ -s "$OUT/results.jsonl" ]; then
	"$D/load" summarize "$OUT/results.jsonl" | tee "$OUT/summary.md"
	if want plots; then
		go run ./plot -in "$OUT/results.jsonl" -out "$OUT"
	fi
fi
echo "results in $OUT"
