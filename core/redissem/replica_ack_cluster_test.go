package redissem_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// On Cluster, WAIT goes to the master of the semaphore's slot: a grant is
// on that master's replica when Acquire returns, a stalled replica of the
// other master does not matter, and a stalled replica of its own master
// makes the grant fail with ErrReplicaAck.
func TestReplicaAckCluster(t *testing.T) {
	set := servertest.StartCluster(t, 2, 1) // masters Addrs[0:2], replica i of master i
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: set.Addrs})
	defer cc.Close()
	ctx := context.Background()
	const name = "ack-cluster"
	own := servertest.SlotMaster(t, set.Addrs[:2], "{"+name+"}", 20*time.Second) // the master of name's slot
	replica := redis.NewClient(&redis.Options{Addr: set.Addrs[2+own], OnConnect: func(ctx context.Context, cn *redis.Conn) error {
		return cn.ReadOnly(ctx).Err()
	}})
	defer replica.Close()
	// This test stalls replicas, never a master: a master slowed by a
	// loaded machine (a node timeout of 1s) must not be failed over.
	for _, a := range set.Addrs[2:] {
		rc := redis.NewClient(&redis.Options{Addr: a})
		err := rc.ConfigSet(ctx, "cluster-replica-no-failover", "yes").Err()
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			logReplication(t, set.Addrs[own])
			logReplication(t, set.Addrs[2+own])
		}
	})
	// The slot's replica acknowledges writes; the other replica is online.
	own0 := redis.NewClient(&redis.Options{Addr: set.Addrs[own]})
	defer own0.Close()
	servertest.AwaitReplicaAck(t, own0, "{"+name+"}ready", 20*time.Second)
	other := redis.NewClient(&redis.Options{Addr: set.Addrs[2+1-own], OnConnect: func(ctx context.Context, cn *redis.Conn) error {
		return cn.ReadOnly(ctx).Err()
	}})
	defer other.Close()
	testwait.Until(t, 20*time.Second, "the other master's replica is not in sync", func() bool {
		info, err := other.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	})
	sem := redissem.New(cc, name, 1, redissem.WithReplicaAck(1, time.Second), redissem.WithOperationTimeout(5*time.Second))
	defer sem.Close()
	// The slot map and the scripts loaded before a node stalls (a stalled
	// node asked for the slot map would stall the client, not WAIT).
	w, err := sem.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	set.Pause(set.Addrs[2+1-own]) // the other master's replica
	p, err := sem.TryAcquire(ctx)
	set.Resume(set.Addrs[2+1-own])
	if err != nil {
		logReplication(t, set.Addrs[own])
		t.Fatalf("Acquire with the other master's replica stalled: %v", err)
	}
	if v, err := replica.HGet(ctx, "distsem:{"+name+"}:m", "used").Result(); err != nil || v != "1" {
		t.Fatalf("the slot's replica has used %q (%v) when Acquire returned, want 1", v, err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	set.Pause(set.Addrs[2+own])
	defer set.Resume(set.Addrs[2+own])
	if _, err := sem.TryAcquire(ctx); !errors.Is(err, redissem.ErrReplicaAck) {
		t.Fatalf("Acquire with the slot's replica stalled: %v, want ErrReplicaAck", err)
	}
}

// logReplication logs what the node at addr says of its replication, for a
// failure's diagnosis.
func logReplication(t *testing.T, addr string) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	info, err := c.Info(context.Background(), "replication").Result()
	t.Logf("INFO replication of %s (%v):\n%s", addr, err, info)
}
