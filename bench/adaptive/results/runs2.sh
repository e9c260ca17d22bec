#!/bin/bash
# Interleaved: static 4, 8, 12 (the sweep's best) and adaptive from 64 and from 1.
cd "$(dirname "$0")"  # beside the tool built as ./adaptive (go build -o adaptive ./adaptive in bench/)
for rep in 0 1 2; do
  for run in "static 4" "adaptive 64" "static 8" "adaptive 1" "static 12"; do
    set -- $run
    uptime
    ./adaptive -mode $1 -limit $2 -duration 40s -out runs2.jsonl -plot plots/r2-$1-$2-rep$rep.png
  done
done
uptime
