#!/bin/bash
# Per-process failsafe-go limiters vs distsem's fleet-wide limit; kill -9 of the computing process; monitor-only over a static 64.
cd "$(dirname "$0")"  # beside the tool built as ./adaptive (go build -o adaptive ./adaptive in bench/)
for rep in 0 1; do
  uptime; ./adaptive -mode failsafe -limit 64 -duration 40s -out runs4.jsonl -plot plots/r4-failsafe-rep$rep.png
  uptime; ./adaptive -mode adaptive -limit 64 -duration 40s -kill 20s -out runs4.jsonl -plot plots/r4-kill-rep$rep.png
  uptime; ./adaptive -mode monitor -baseline 23ms -limit 64 -duration 40s -out runs4.jsonl -plot plots/r4-monitor-rep$rep.png
done
uptime
