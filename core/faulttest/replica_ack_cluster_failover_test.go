package faulttest

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// TestStaleReplicaPromotedCluster is TestStaleReplicaPromoted on a Redis
// Cluster of three masters with a replica each (a failover needs the
// other masters' votes): the semaphore's master announces a proxy's port,
// so that its replica (and clients) reach it through the proxy, and the
// proxy holds what the master sends on the replication link (the
// connection that sent REPLCONF). Then that master is killed, its stale
// replica promoted, and another master's replica made its replica.
func TestStaleReplicaPromotedCluster(t *testing.T) {
	t.Run("ack", func(t *testing.T) { staleReplicaPromotedCluster(t, true) })
	t.Run("no-ack", func(t *testing.T) { staleReplicaPromotedCluster(t, false) })
}

func staleReplicaPromotedCluster(t *testing.T, ack bool) {
	// Runs last: go-redis redials a dead address in a goroutine of its
	// own that ends within a second of the client's Close.
	t.Cleanup(func() { awaitRedialsDone(t) })
	set := servertest.StartCluster(t, 3, 1) // replica 3+i of master i
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	const name = "stale-replica"
	own := servertest.SlotMaster(t, set.Addrs[:3], "{"+name+"}", 20*time.Second)
	master, spare := set.Addrs[own], set.Addrs[3+(own+1)%3]
	px, err := faultproxy.Start(master)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	px.SetTag("REPLCONF")
	_, mport, _ := strings.Cut(master, ":")
	_, pport, _ := strings.Cut(px.Addr(), ":")
	bus, _ := strconv.Atoi(mport)
	mc := redis.NewClient(&redis.Options{Addr: master})
	defer mc.Close()
	if err := mc.ConfigSet(ctx, "cluster-announce-bus-port", strconv.Itoa(bus+10000)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := mc.ConfigSet(ctx, "cluster-announce-port", pport).Err(); err != nil {
		t.Fatal(err)
	}
	// The replicas follow the announced address: their links go through
	// the proxy, where they are tagged.
	rc := redis.NewClient(&redis.Options{Addr: set.Addrs[3+own]})
	defer rc.Close()
	rcs := []*redis.Client{rc}
	testwait.Until(t, 30*time.Second, "the replicas did not replicate through the proxy", func() bool {
		for _, rc := range rcs {
			info, err := rc.Info(ctx, "replication").Result()
			if err != nil || !strings.Contains(info, "master_port:"+pport+"\r") || !strings.Contains(info, "master_link_status:up") {
				return false
			}
		}
		return true
	})
	servertest.AwaitReplicaAck(t, mc, "{stale-replica}ready", 30*time.Second)

	const limit, procs, per = 4, 2, 4
	h := newHolds()
	for range procs {
		// Each client its own copy of the start-up addresses: go-redis
		// appends the addresses it learns (the proxy's) to that slice, in
		// place.
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: slices.Clone(set.Addrs)})
		opts := []redissem.Option{redissem.WithKeyPrefix("sr:"), redissem.WithDefaultLeaseTTL(10 * time.Second)}
		if ack {
			opts = append(opts, redissem.WithReplicaAck(1, 100*time.Millisecond))
		}
		sem := redissem.New(c, name, limit, opts...)
		t.Cleanup(func() { sem.Close(); c.Close() })
		h.run(ctx, sem, per)
	}
	testwait.Until(t, 30*time.Second, "no grant before the freeze", func() bool { return h.grants() >= limit })
	px.SetHold(faultproxy.Tagged, faultproxy.Downstream, true) // the replicas hear nothing more
	frozen := time.Now()
	time.Sleep(2 * time.Second) // the window in which grants go on, frozen
	px.SetMode(faultproxy.Refuse)
	set.Kill(master)
	killed := time.Now()
	duringFreeze, calledInFreeze := h.grantsIn(frozen, killed)
	testwait.Until(t, 30*time.Second, "no replica was promoted", func() bool {
		for _, rc := range rcs {
			role, err := rc.Do(ctx, "ROLE").Slice()
			if err == nil && len(role) > 0 && role[0] == "master" {
				return true
			}
		}
		return false
	})
	sw := time.Now()
	// The promoted replica gets a replica: another master's, moved over.
	id, err := rc.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	sc := redis.NewClient(&redis.Options{Addr: spare})
	defer sc.Close()
	testwait.Until(t, 10*time.Second, "the spare replica did not follow the promoted one", func() bool {
		return sc.Do(ctx, "CLUSTER", "REPLICATE", id).Err() == nil
	})
	time.Sleep(8 * time.Second) // the window measured after the switch
	end := time.Now()
	stop()
	h.wait(t)

	ivs, lost, ackErrs, errs := h.snapshot()
	over, _ := spans(ivs, limit, frozen.UnixNano(), time.Now().UnixNano())
	after, _ := h.grantsIn(sw, end)
	scenario := "stale-replica-cluster-no-ack"
	if ack {
		scenario = "stale-replica-cluster-ack"
	}
	figure(t, scenario, "limit", limit, "peak", peak(ivs), "over", over, "grants", len(ivs),
		"grants_during_freeze", duringFreeze, "promotion", sw.Sub(killed), "lost", lost,
		"grants_after_switch", after, "replica_ack_errors", ackErrs, "other_errors", errs)
	if len(h.errSample) > 0 {
		t.Logf("errors: %v", h.errSample)
	}
	if after == 0 {
		t.Errorf("no grant in the %v after the promotion", end.Sub(sw))
	}
	if ack && peak(ivs) > limit {
		t.Errorf("over-admission with WithReplicaAck: %d permits held at once, limit %d (%v over)", peak(ivs), limit, over)
	}
	if ack && calledInFreeze > 0 {
		t.Errorf("%d Acquire calls made during the freeze returned a permit that no replica acknowledged", calledInFreeze)
	}
}

// awaitRedialsDone waits until no goroutine of go-redis redials a dead
// address (pool.(*ConnPool).tryDial), so that the leak check after the
// suite does not count one that a closed client left behind.
func awaitRedialsDone(t *testing.T) {
	testwait.Until(t, 10*time.Second, "go-redis goroutines still redialling", func() bool {
		buf := make([]byte, 1<<20)
		return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "ConnPool).tryDial")
	})
}
