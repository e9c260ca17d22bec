package main

import (
	"flag"
	"fmt"
	"io"
	"time"
)

// scenario is a deployment to size: processes sharing semaphores on the
// masters of a Redis Cluster, each master one core for scripts (Redis runs
// commands on one thread).
type scenario struct {
	procs, sems, shards int
	ttl                 time.Duration
	rate                float64 // grants per second per process
	pool                int     // pool connections per process per master
	maxClients          int
}

func (s *scenario) flags(fs *flag.FlagSet) {
	fs.IntVar(&s.procs, "model-procs", 1000, "model: processes")
	fs.IntVar(&s.sems, "model-sems", 10000, "model: semaphores")
	fs.IntVar(&s.shards, "model-shards", 6, "model: Cluster masters")
	fs.DurationVar(&s.ttl, "model-ttl", 10*time.Second, "model: lease TTL (renewed every TTL/3)")
	fs.Float64Var(&s.rate, "model-rate", 100, "model: grants per second per process")
	fs.IntVar(&s.pool, "model-pool", 10, "model: go-redis pool connections per process per master")
	fs.IntVar(&s.maxClients, "model-maxclients", 10000, "model: redis-server maxclients")
}

func find(ps []*phase, name string) *phase {
	for _, p := range ps {
		if p.name == name {
			return p
		}
	}
	panic("capacity: no phase " + name)
}

func printPhases(w io.Writer, c config, ps []*phase) {
	fmt.Fprintf(w, "workers %d, sems %d, ttl %v, %v per phase\n\n", c.workers, c.sems, c.ttl, c.duration)
	fmt.Fprintln(w, "| phase | operations/s | scripts/op | commands/op | script µs (commandstats) | server CPU µs/op (INFO cpu) | server cores busy |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, p := range ps {
		fmt.Fprintf(w, "| %s | %.0f | %.2f | %.1f | %.1f | %.1f | %.2f |\n", p.name, float64(p.ops)/p.seconds,
			p.scriptsPerOp(), p.commandsPerOp(), p.scriptUS(), p.cpuPerOpUS, (p.after.cpuSec-p.before.cpuSec)/p.seconds)
	}
	fmt.Fprintln(w)
}

// printModel prints what one core carries in each mode, and the load of
// the scenario on each master as the number of semaphores that each
// process keeps a lease on grows.
func printModel(w io.Writer, s scenario, ps []*phase, subBytes float64) {
	pair, spread, hand, beat := find(ps, "pairs"), find(ps, "spread"), find(ps, "handoffs"), find(ps, "heartbeats")
	lbeat, lpair := find(ps, "leased-beats"), find(ps, "leased-pairs")
	period := (s.ttl / 3).Seconds()
	fmt.Fprintln(w, "One Redis core (one Cluster master), from the server CPU per operation:")
	fmt.Fprintf(w, "  default mode, uncontended grants/s: %.0f (%.1f µs each) on semaphores in use, %.0f (%.1f µs) on seldom-used ones\n",
		1e6/pair.cpuPerOpUS, pair.cpuPerOpUS, 1e6/spread.cpuPerOpUS, spread.cpuPerOpUS)
	fmt.Fprintf(w, "  default mode, hand-offs/s:          %.0f (%.1f µs each)\n", 1e6/hand.cpuPerOpUS, hand.cpuPerOpUS)
	fmt.Fprintf(w, "  lease renewals/s:                   %.0f (%.1f µs each)\n", 1e6/beat.cpuPerOpUS, beat.cpuPerOpUS)
	fmt.Fprintf(w, "  leased mode, share renewals/s:      %.0f (%.1f µs each)\n", 1e6/lbeat.cpuPerOpUS, lbeat.cpuPerOpUS)
	fmt.Fprintf(w, "  leased mode, grants within a share: %.3f scripts per grant (%.0f grants/s in one process)\n\n",
		lpair.scriptsPerOp(), float64(lpair.ops)/lpair.seconds)

	perShard := float64(s.procs) / float64(s.shards)
	fmt.Fprintf(w, "%d processes, %d semaphores, %d masters, TTL %v (renewal every %.2fs), %.0f grants/s per process:\n",
		s.procs, s.sems, s.shards, s.ttl, period, s.rate)
	grants := perShard * s.rate
	// A grant costs a hand-off under contention, a seldom-used
	// semaphore's pair otherwise: the model charges the larger.
	grantUS := max(hand.cpuPerOpUS, spread.cpuPerOpUS)
	fmt.Fprintf(w, "  grants per master: %.0f/s, %.2f cores at %.1f µs each\n", grants, grants*grantUS/1e6, grantUS)
	conns := s.procs * (s.pool + 1)
	fmt.Fprintf(w, "  connections per master: up to %d (pool %d + 1 pub/sub, per process) against maxclients %d\n",
		conns, s.pool, s.maxClients)
	// Each process subscribes one shard channel per semaphore it waits on.
	worst := float64(s.procs) * float64(s.sems) / float64(s.shards)
	fmt.Fprintf(w, "  shard-channel subscriptions per master if every process waits on every semaphore: %.0f, %.0f MiB\n\n",
		worst, worst*subBytes/(1<<20))
	fmt.Fprintln(w, "| leases per process | renewals/s per master | renewal cores per master | cores per master with the grants | leased mode: renewal cores per master |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, active := range []int{1, 10, 100, 1000, 10000} {
		if active > s.sems {
			break
		}
		// Each process renews each semaphore it holds or waits on with
		// one script every TTL/3; the semaphores spread evenly over the
		// masters.
		renewals := float64(s.procs) * float64(active) / float64(s.shards) / period
		rc := renewals * beat.cpuPerOpUS / 1e6
		fmt.Fprintf(w, "| %d | %.0f | %.2f | %.2f | %.2f |\n", active, renewals, rc, rc+grants*grantUS/1e6,
			renewals*lbeat.cpuPerOpUS/1e6)
	}
}
