#!/bin/bash
# Run 15 (bench/RESULTS.md §7): run 14's comparison (old / new / seed / ref
# interleaved, luacost, hopfloor) again on this session's machine, then the
# pair rate each design's scripts allow with no library around them
# (luacost PART=loop) and the in-process bound (bench/local). Run it on an
# idle machine, from anywhere (about 15 minutes):
#   bench/results-core/run15/run.sh
set -eu
cd "$(dirname "$0")/../.." # bench
OUT=${OUT:-$PWD/results-core/run15}
mkdir -p "$OUT"
OUT=$OUT results-core/run14/run.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd luacost && PART=loop ROUNDS=15 N=2000 OUT="$tmp" ./run.sh) > "$OUT/luacost-loop.txt" 2>&1
go test -run '^$' -bench . -benchmem -count 5 ./local/ > "$OUT/local.txt" 2>&1
echo "done: $OUT"
