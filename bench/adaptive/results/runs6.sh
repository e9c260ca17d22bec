#!/bin/bash
# Monitor-only over a static 64 (baseline given), and the change with static 12 (now with the change's intervals), interleaved.
cd "$(dirname "$0")"  # beside the tool built as ./adaptive (go build -o adaptive ./adaptive in bench/)
for rep in 0 1; do
  uptime; ./adaptive -mode monitor -baseline 23ms -limit 64 -duration 40s -out runs6.jsonl -plot plots/r6-monitor-rep$rep.png
  uptime; ./adaptive -mode static -limit 12 -duration 60s -change 30s -compete 4 -out runs6.jsonl -plot plots/r6-change-static-12-rep$rep.png
done
uptime; ./adaptive -mode adaptive -tolerance 2 -error-rate 0.2 -limit 1 -duration 60s -change 30s -compete 4 -out runs6.jsonl -plot plots/r6-change-tuned-rep0.png
uptime
