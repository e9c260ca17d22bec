// Command capacity measures what one redis-server spends on distsem's
// operations, and derives from it the load that a deployment puts on each
// Redis core (see model.go):
//
//	cd bench && go run ./capacity -redis 127.0.0.1:7460
//
// It runs six phases on the server, one after the other, each after
// CONFIG RESETSTAT, and reads the server's own accounting (INFO cpu and
// commandstats) before and after each:
//
//	pairs        -workers goroutines, each on a semaphore of its own
//	             (limit 1), loop acquire → release in the default mode
//	spread       the same goroutines, each acquire on one of -sems
//	             semaphores picked at random: a semaphore is seldom used
//	             twice in a row, so its state is made anew, as in a fleet
//	             with many semaphores each used now and then
//	handoffs     the same goroutines on one semaphore of limit 1: every
//	             grant is a hand-off (within the process, so its grant
//	             comes back in the release's reply, without PUBLISH)
//	heartbeats   -sems semaphores, one permit held on each with a lease of
//	             -ttl, renewed every ttl/3 by the process's loop
//	leased-pairs -workers goroutines on one leased semaphore of limit 64
//	leased-beats -sems leased semaphores, a permit held on each
//
// Then it subscribes one connection to -subs shard channels named as
// distsem names them and reports the server memory each one keeps.
//
// For each phase it prints the operations per second, scripts and commands per
// operation, the scripts' own server time (commandstats) and the server's
// whole CPU per operation (INFO cpu: scripts plus reading, parsing and
// writing, which commandstats does not count). Then it prints the model
// for the deployment of -model-procs processes sharing -model-sems
// semaphores on -model-shards shards.
//
// The server should run nothing else; the machine may (the figures are
// the server's own CPU time, not wall-clock shares of the machine).
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

type config struct {
	addr     string
	duration time.Duration
	workers  int
	sems     int
	spread   int
	subs     int
	ttl      time.Duration
	scenario scenario
}

func main() {
	var c config
	flag.StringVar(&c.addr, "redis", "127.0.0.1:7460", "redis-server address (standalone, otherwise idle)")
	flag.DurationVar(&c.duration, "duration", 5*time.Second, "length of each phase")
	flag.IntVar(&c.workers, "workers", 8, "goroutines of the pairs phases")
	flag.IntVar(&c.sems, "sems", 1000, "semaphores of the heartbeat phases")
	flag.IntVar(&c.spread, "spread", 10000, "semaphores of the spread phase")
	flag.IntVar(&c.subs, "subs", 50000, "shard channels subscribed to measure their memory")
	flag.DurationVar(&c.ttl, "ttl", time.Second, "lease of the heartbeat phases (renewed every ttl/3)")
	c.scenario.flags(flag.CommandLine)
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(1)
	}
}

// phase is one measured phase: its operations and the server's accounting.
type phase struct {
	name       string
	ops        int64
	seconds    float64
	before     serverStats
	after      serverStats
	cpuPerOpUS float64 // the server's whole CPU per operation
}

func (p *phase) scriptsPerOp() float64 { return float64(p.after.scripts) / float64(p.ops) }
func (p *phase) commandsPerOp() float64 {
	return float64(p.after.commands) / float64(p.ops)
}
func (p *phase) scriptUS() float64 {
	return float64(p.after.scriptUsec) / float64(max(p.after.scripts, 1))
}

// step is one phase: setup runs before the measured window (the
// acquisitions of the heartbeat phases), run is the window and returns the
// operations it made (0: count the server's script calls instead),
// teardown runs after it.
type step struct {
	name            string
	setup, teardown func() error
	run             func() (int64, error)
}

func run(c config) error {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: c.addr, PoolSize: 4 * c.workers})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return err
	}
	prefix := "capacity-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	opts := func(ttl time.Duration) []redissem.Option {
		return []redissem.Option{redissem.WithKeyPrefix(prefix + ":"), redissem.WithDefaultLeaseTTL(ttl)}
	}
	steps := []step{
		pairsStep("pairs", c, c.workers, redissem.NewKeyed(rdb, "pairs", 1, opts(10*time.Second)...)),
		pairsStep("spread", c, -c.spread, redissem.NewKeyed(rdb, "spread", 1, opts(10*time.Second)...)),
		holdStep("heartbeats", c, redissem.NewKeyed(rdb, "beats", 1, opts(c.ttl)...)),
		pairsStep("handoffs", c, 1, redissem.NewKeyed(rdb, "handoffs", 1, opts(10*time.Second)...)),
		pairsStep("leased-pairs", c, 1, redissem.NewLeasedKeyed(rdb, "leased-pairs", 64, opts(10*time.Second)...)),
		holdStep("leased-beats", c, redissem.NewLeasedKeyed(rdb, "leased-beats", 1, opts(c.ttl)...)),
	}
	var done []*phase
	for _, st := range steps {
		p, err := measure(ctx, rdb, st)
		if err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
		done = append(done, p)
	}
	subBytes, err := subscriptionBytes(ctx, rdb, prefix+":", c.subs)
	if err != nil {
		return fmt.Errorf("subscriptions: %w", err)
	}
	printPhases(os.Stdout, c, done)
	fmt.Printf("shard-channel subscriptions: %.0f bytes of used_memory each (%d channels, one subscriber each)\n\n", subBytes, c.subs)
	printModel(os.Stdout, c.scenario, done, subBytes)
	return nil
}

// measure runs one step: its setup, then CONFIG RESETSTAT and the measured
// window with the server's accounting around it, then its teardown.
func measure(ctx context.Context, rdb *redis.Client, st step) (*phase, error) {
	if err := st.setup(); err != nil {
		return nil, err
	}
	defer st.teardown()
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		return nil, err
	}
	before, err := readStats(ctx, rdb)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ops, err := st.run()
	if err != nil {
		return nil, err
	}
	p := &phase{name: st.name, seconds: time.Since(start).Seconds(), before: before}
	if p.after, err = readStats(ctx, rdb); err != nil {
		return nil, err
	}
	if ops == 0 {
		ops = p.after.scripts
	}
	p.ops = max(ops, 1)
	p.cpuPerOpUS = (p.after.cpuSec - before.cpuSec) * 1e6 / float64(p.ops)
	return p, nil
}

// pairsStep loops acquire → release on c.workers goroutines for
// c.duration, goroutine i on key i mod keys, or with keys < 0 each pair on
// one of −keys keys picked at random; an operation is one pair.
func pairsStep(name string, c config, keys int, k *core.Keyed) step {
	ctx := context.Background()
	return step{
		name:     name,
		setup:    func() error { return nil },
		teardown: k.Close,
		run: func() (int64, error) {
			var n atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, c.workers)
			stop := time.Now().Add(c.duration)
			for i := range c.workers {
				key := func() string { return "k" + strconv.Itoa(i%keys) }
				if keys < 0 {
					key = func() string { return "k" + strconv.Itoa(rand.IntN(-keys)) }
				}
				wg.Go(func() {
					for time.Now().Before(stop) {
						p, err := k.Acquire(ctx, key())
						if err != nil {
							errs <- err
							return
						}
						if err := p.Release(ctx); err != nil {
							errs <- err
							return
						}
						n.Add(1)
					}
				})
			}
			wg.Wait()
			close(errs)
			return n.Load(), <-errs
		},
	}
}

// holdStep holds one permit on each of c.sems semaphores (acquired in
// setup) for c.duration while the process's loop renews their leases; an
// operation is one renewal script.
func holdStep(name string, c config, k *core.Keyed) step {
	ctx := context.Background()
	var ps []*core.Permit
	return step{
		name: name,
		setup: func() error {
			for i := range c.sems {
				p, err := k.Acquire(ctx, "k"+strconv.Itoa(i))
				if err != nil {
					return err
				}
				ps = append(ps, p)
			}
			// Let the renewals of the acquisitions' own times spread out.
			time.Sleep(c.ttl)
			return nil
		},
		teardown: func() error {
			for _, p := range ps {
				p.Release(ctx)
			}
			return k.Close()
		},
		run: func() (int64, error) {
			time.Sleep(c.duration)
			return 0, nil
		},
	}
}
