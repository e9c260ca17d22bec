#!/bin/bash
# MapReduce, -slow 0, PostgreSQL 15 (fsync=off, 127.0.0.1:25010), Redis 127.0.0.1:25000; 20M rows, K=4, 4 workers x 4.
DSN='postgres://postgres@127.0.0.1:25010/postgres?sslmode=disable'
for round in 1 2 3 4 5; do for m in none leased semaphore; do
  args="-mode $m"; [ $m = leased ] && args="-mode semaphore -leased"
  /tmp/pgsample/pgsample -dsn "$DSN" -match mr13b -d 10m > /tmp/mr13/pg-$round-$m.txt 2>&1 & SP=$!
  /tmp/leased-mr -driver pgx -dsn "$DSN" -redis redis://127.0.0.1:25000 -table mr13b -name mr13-$round-$m-$RANDOM -progress 0 -rows 20000000 -page 2000 -limit 4 -workers 4 -concurrency 4 -slow 0 $args > /tmp/mr13/job-$round-$m.txt 2>&1
  kill -TERM $SP; wait $SP
  echo "$round $m $(grep throughput /tmp/mr13/job-$round-$m.txt | awk '{print $2}') $(grep 'max in flight' /tmp/mr13/job-$round-$m.txt | awk '{print $4}') | $(cat /tmp/mr13/pg-$round-$m.txt)"
done; done
