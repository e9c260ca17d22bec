package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/distsem/distsem/bench/analyze"
	"github.com/redis/go-redis/v9"
)

// cleanup deletes the semaphores' keys (best effort), on every master of
// a Cluster, one key per command (the keys are in different slots).
func cleanup(c config) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	del := func(ctx context.Context, cl *redis.Client) error {
		iter := cl.Scan(ctx, 0, "*"+c.name+"*", 1000).Iterator()
		pipe := cl.Pipeline()
		for iter.Next(ctx) {
			pipe.Unlink(ctx, iter.Val())
		}
		_, err := pipe.Exec(ctx)
		return err
	}
	if c.cluster != "" {
		cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(c.cluster, ",")})
		defer cl.Close()
		_ = cl.ForEachMaster(ctx, del)
		return
	}
	cl := redis.NewClient(&redis.Options{Addr: c.addr})
	defer cl.Close()
	_ = del(ctx, cl)
}

// child runs one worker process.
func child(c config) error {
	if err := c.check(); err != nil {
		return err
	}
	sem, closeFn, err := openBackend(c)
	if err != nil {
		return err
	}
	defer closeFn()
	fmt.Println("ready")
	var start int64
	if _, err := fmt.Fscan(os.Stdin, &start); err != nil {
		return fmt.Errorf("reading the start instant: %w", err)
	}
	end := start + int64(c.duration)
	time.Sleep(time.Until(time.Unix(0, start)))
	if c.cpuProfile != "" {
		stop, err := startProfile(fmt.Sprintf("%s/cpu%d.prof", c.cpuProfile, c.childIndex))
		if err != nil {
			return err
		}
		defer stop()
	}

	per := make([][]analyze.Event, c.childGors)
	errs := make([]int64, c.childGors)
	var firstErr sync.Once
	var wg sync.WaitGroup
	for g := range c.childGors {
		wg.Go(func() {
			ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, end))
			defer cancel()
			evs := make([]analyze.Event, 0, 1024)
			for {
				a := time.Now().UnixNano()
				if a >= end {
					break
				}
				key := 0
				if c.sems > 1 {
					key = rand.IntN(c.sems)
				}
				gr, err := sem.acquire(ctx, key)
				if err != nil {
					if ctx.Err() != nil {
						break // the run is over
					}
					errs[g]++
					firstErr.Do(func() { fmt.Fprintf(os.Stderr, "worker %d/%d: acquire: %v\n", c.childIndex, g, err) })
					break
				}
				t := time.Now().UnixNano()
				if c.hold > 0 {
					time.Sleep(c.hold)
				}
				rs := time.Now().UnixNano()
				rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
				err = gr.release(rctx)
				rcancel()
				rd := time.Now().UnixNano()
				if err != nil {
					errs[g]++
					firstErr.Do(func() { fmt.Fprintf(os.Stderr, "worker %d/%d: release: %v\n", c.childIndex, g, err) })
				}
				evs = append(evs, analyze.Event{
					Proc: int32(c.childIndex), Gor: int32(g),
					AcqStart: a, Grant: t, RelStart: rs, RelDone: rd,
					ServerGrant: gr.server, Token: gr.token,
				})
			}
			per[g] = evs
		})
	}
	wg.Wait()
	var all []analyze.Event
	var nerr int64
	for g := range per {
		all = append(all, per[g]...)
		nerr += errs[g]
	}
	f, err := os.Create(c.childOut)
	if err != nil {
		return err
	}
	if err := analyze.WriteEvents(f, all); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("errors %d\n", nerr)
	return nil
}

// childFlags is the command line of a worker process of c.
func childFlags(c config) []string {
	return []string{
		"-backend", c.backend, "-redis", c.addr, "-name", c.name,
		"-limit", strconv.FormatInt(c.limit, 10), "-procs", strconv.Itoa(c.procs),
		"-workers", strconv.Itoa(c.workers), "-hold", c.hold.String(),
		"-duration", c.duration.String(), "-lease", c.lease.String(), "-pool", strconv.Itoa(c.pool),
		"-warmup", c.warmup.String(), "-cooldown", c.cooldown.String(),
		"-sems", strconv.Itoa(c.sems), "-cluster", c.cluster, "-flows", strconv.Itoa(c.flows),
		"-replica-ack", strconv.Itoa(c.ack), "-replica-ack-timeout", c.ackWait.String(),
		"-cpuprofile", c.cpuProfile,
	}
}

// startProfile writes a CPU profile of this process to path until the
// returned function is called.
func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
