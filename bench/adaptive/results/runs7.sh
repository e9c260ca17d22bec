#!/bin/bash
# The change again after the slower-resource rule needs a fifth less concurrency: default, then tuned.
cd "$(dirname "$0")"  # beside the tool built as ./adaptive (go build -o adaptive ./adaptive in bench/)
uptime; ./adaptive -mode adaptive -limit 1 -duration 60s -change 30s -compete 4 -out runs7.jsonl -plot plots/r7-change-adaptive-rep0.png
uptime; ./adaptive -mode adaptive -tolerance 2 -error-rate 0.2 -limit 1 -duration 60s -change 30s -compete 4 -out runs7.jsonl -plot plots/r7-change-tuned-rep0.png
uptime; ./adaptive -mode static -limit 12 -duration 60s -change 30s -compete 4 -out runs7.jsonl -plot plots/r7-change-static-12-rep0.png
uptime
