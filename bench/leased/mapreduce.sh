#!/bin/bash
# The MapReduce job of examples/mapreduce on a real PostgreSQL, K = 4,
# `-slow 0`, pages split evenly (`-skew 0`), with 4 and with 16 subtask
# processes of 4 goroutines each: the leased-shares mode, the default mode,
# `-mode none` (no limit), and three ceilings of a limit of K: 4 processes
# with SetMaxOpenConns(1) each (`-mode setmaxopen -workers 4`: exactly K
# queries at once and no coordination at all), K tokens in an OS pipe
# (`-mode pipe`: the cheapest hand-off between processes of one machine)
# and K tokens in a Redis list (`-mode list`, BLPOP and RPUSH: the
# cheapest hand-off through Redis). Each round runs every job
# once, the order rotating by round, on a Redis and a PostgreSQL that you
# start (DSN, REDIS); these jobs give the rows/s. Then it runs the leased
# mode, the default mode, the pipe and the list once more each, with a
# psql sampler that counts the page queries PostgreSQL shows active
# (pg_stat_activity, every 5 ms), started 0.5 s before the job and stopped
# at its end: the sampler's own queries take CPU from the job on a small
# machine (on 2 cores, 5-23 % fewer rows/s), so the jobs that give the
# rows/s run without it. The pipe and the list never let more than K
# queries start (the workers' own timeline shows it), so their counts
# show what the sampler reads for an exact limit of K: pg_stat_activity
# is not read at one instant, and a query that ends while the view is
# read can be counted beside the one that starts after it. Output: one
# line per job (jobs.txt, with the load average before and after) and a
# summary.
#   DSN='postgres://postgres@127.0.0.1:7660/postgres?sslmode=disable' \
#   REDIS=redis://127.0.0.1:7401 PGPORT=7660 ROUNDS=3 bench/leased/mapreduce.sh
set -eu
cd "$(dirname "$0")/../.." # the repository
: "${DSN:?set DSN to a PostgreSQL URL}" "${REDIS:?set REDIS to a Redis URL}" "${PGPORT:?set PGPORT}"
ROUNDS=${ROUNDS:-3}
ROWS=${ROWS:-5000000}
K=4 # the limit of every job (and of the count of samples above it)
OUT=${OUT:-$(mktemp -d /tmp/distsem-mapreduce.XXXXXX)}
mkdir -p "$OUT"
if [ -s "$OUT/jobs.txt" ]; then
  echo "$OUT/jobs.txt exists: use a fresh OUT" >&2
  exit 1
fi
go build -o "$OUT/mr" ./examples/mapreduce
{ echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
  uname -srm; grep -m1 'model name' /proc/cpuinfo; nproc; go version; } > "$OUT/machine.txt"
SAMPLE="SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND backend_type = 'client backend'
  AND pid <> pg_backend_pid() AND query LIKE '%pg_sleep(\$3%'"
job() { # sampled label procs args...
  local sampled=$1 label=$2 procs=$3
  shift 3
  local before sampler
  before=$(cut -d' ' -f1-3 /proc/loadavg)
  : > "$OUT/sample.txt"
  if [ "$sampled" = 1 ]; then
    printf '%s \\watch 0.005\n' "$SAMPLE" | psql -X -At -h 127.0.0.1 -p "$PGPORT" -U postgres > "$OUT/sample.txt" 2>/dev/null &
    sampler=$!
    sleep 0.5
  fi
  "$OUT/mr" -driver pgx -dsn "$DSN" -redis "$REDIS" -name "mr-$label-$procs-$rep-$sampled" -slow 0 -limit "$K" -concurrency 4 \
    -skew 0 -rows "$ROWS" -compare=false -progress 0 -workers "$procs" "$@" > "$OUT/job.txt" 2>&1
  if [ "$sampled" = 1 ]; then
    kill "$sampler"
    wait "$sampler" 2>/dev/null || true
  fi
  local rps share inflight active slots
  rps=$(awk '/throughput/ {print $2}' "$OUT/job.txt")
  slots=$(awk '/slot use/ {print $3}' "$OUT/job.txt")
  share=$(awk '/page share/ {print $3}' "$OUT/job.txt")
  inflight=$(awk '/max in flight/ {print $4}' "$OUT/job.txt")
  active=$(sort -n "$OUT/sample.txt" | tail -1)
  above=$(awk -v k="$K" '$1 > k' "$OUT/sample.txt" | wc -l)
  echo "round=$rep procs=$procs mode=$label sampled=$sampled rows/s=$rps page_share=${share:--} slot_use=${slots:--} max_in_flight=$inflight pg_active_max=${active:--} pg_above_k=$above samples=$(wc -l < "$OUT/sample.txt") load=[$before] -> [$(cut -d' ' -f1-3 /proc/loadavg)]" | tee -a "$OUT/jobs.txt"
  cat "$OUT/job.txt" >> "$OUT/jobs.log"
}
for rep in $(seq "$ROUNDS"); do
  for procs in 4 16; do
    case $((rep % 4)) in
      1) order="leased default none ceiling pipe list" ;;
      2) order="default none ceiling pipe list leased" ;;
      3) order="none ceiling pipe list leased default" ;;
      0) order="ceiling pipe list leased default none" ;;
    esac
    for m in $order; do
      case $m in
        leased) job 0 leased "$procs" -leased ;;
        default) job 0 default "$procs" ;;
        none) job 0 none "$procs" -mode none ;;
        ceiling) if [ "$procs" = 4 ]; then job 0 ceiling 4 -mode setmaxopen; fi ;;
        pipe) job 0 pipe "$procs" -mode pipe ;;
        list) job 0 list "$procs" -mode list ;;
      esac
    done
    # The limit, seen from PostgreSQL.
    job 1 leased "$procs" -leased
    job 1 default "$procs"
    job 1 pipe "$procs" -mode pipe
    job 1 list "$procs" -mode list
  done
done
# Summary: per number of processes and mode, rows/s over none's of the same round.
awk '{
  for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
  key = f["procs"] " " f["mode"]; r = f["round"]
  if (f["sampled"] == 1) { act[key] = act[key] " " f["pg_active_max"] " (" f["pg_above_k"] "/" f["samples"] ")"; next }
  rps[f["procs"] " " f["mode"] " " r] = f["rows/s"]
  if (!(key in seen)) { seen[key] = 1; keys[++n] = key }
  if (r > nr) nr = r
  share[key] = share[key] " " f["page_share"]; slot[key] = slot[key] " " f["slot_use"]
} END {
  print "procs mode: rows/s over none'"'"'s per round | page share per round | pg_stat_activity max per round (sampled jobs; samples above K / all) | slot use per round"
  for (k = 1; k <= n; k++) {
    split(keys[k], p, " "); line = keys[k] ":"
    for (r = 1; r <= nr; r++) { b = rps[p[1] " none " r]; line = line sprintf(" %.2f", (b > 0 ? rps[keys[k] " " r] / b : 0)) }
    print line " |" share[keys[k]] " |" act[keys[k]] " |" slot[keys[k]]
  }
}' "$OUT/jobs.txt" | tee "$OUT/summary.txt"
echo "output in $OUT"
