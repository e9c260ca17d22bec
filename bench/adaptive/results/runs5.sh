#!/bin/bash
# Tuned: tolerance 2 and error rate 0.2, from 64 and from 1, beside static 12.
cd "$(dirname "$0")"  # beside the tool built as ./adaptive (go build -o adaptive ./adaptive in bench/)
for rep in 0 1; do
  for run in "adaptive 64" "static 12" "adaptive 1"; do
    set -- $run
    uptime
    ./adaptive -mode $1 -limit $2 -tolerance 2 -error-rate 0.2 -duration 40s -out runs5.jsonl -plot plots/r5-tuned-$1-$2-rep$rep.png
  done
done
uptime
