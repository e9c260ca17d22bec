#!/bin/bash
# The competing load at 30s: static at the sweep's K* (12) and at 4, and adaptive from 1, interleaved.
cd "$(dirname "$0")"  # beside the tool built as ./adaptive (go build -o adaptive ./adaptive in bench/)
for rep in 0 1; do
  for run in "adaptive 1" "static 12" "static 4"; do
    set -- $run
    uptime
    ./adaptive -mode $1 -limit $2 -duration 60s -change 30s -compete 4 -out runs3.jsonl -plot plots/r3-change-$1-$2-rep$rep.png
  done
done
uptime
