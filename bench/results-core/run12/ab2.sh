#!/bin/bash
# 7 interleaved repetitions of the uncontended and burst workloads (old, new, seed).
redis-server --port 6431 --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile /tmp/r6431.pid >/dev/null; sleep 0.5; PID=$(cat /tmp/r6431.pid)
for rep in 1 2 3 4 5 6 7; do for w in uncontended burst; do for v in old new seed; do
  bin=./load_new; b=distsem; [ $v = old ] && bin=./load_old; [ $v = seed ] && b=seed
  args="-limit 1 -procs 1 -workers 1 -hold 0"; [ $w = burst ] && args="-limit 8 -procs 4 -workers 128 -hold 0"
  $bin -duration 4s -results ab2.jsonl -redis 127.0.0.1:6431 -redis-pid $PID -label "$w-$v" -backend $b -rep $rep $args >/dev/null 2>&1
done; done; done
kill $PID
