package servertest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// sentinelMaster is the master name of the Sentinel set that the tests
// start.
const sentinelMaster = "distsem"

// startSharedCluster starts three redis-server nodes in cluster mode, each
// master of a third of the slots, and waits until every node reports the
// cluster as ok (about two seconds).
func startSharedCluster() (func(), error) {
	var nodes []*redisProc
	stop := func() {
		for _, n := range nodes {
			n.stop()
		}
	}
	for range 3 {
		n, err := startRedisProc(true, "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
		if err != nil {
			stop()
			return nil, err
		}
		nodes = append(nodes, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := formCluster(ctx, nodes); err != nil {
		stop()
		return nil, fmt.Errorf("forming a Redis Cluster: %w", err)
	}
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.addr()
	}
	os.Setenv(envCluster, strings.Join(addrs, ","))
	return stop, nil
}

func formCluster(ctx context.Context, nodes []*redisProc) error {
	clients := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1})
		defer clients[i].Close()
	}
	const slots = 16384
	for i, c := range clients {
		lo, hi := i*slots/len(nodes), (i+1)*slots/len(nodes)-1
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return err
		}
		if err := c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return err
		}
	}
	for _, n := range nodes[1:] {
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", n.port).Err(); err != nil {
			return err
		}
	}
	want := "cluster_known_nodes:" + strconv.Itoa(len(nodes))
	return awaitFiles(ctx, dirs(nodes...), func() bool {
		for _, c := range clients {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, want) {
				return false
			}
		}
		return true
	})
}

// startSharedSentinel starts a master, its replica and three sentinels
// (quorum 2) that monitor it as "distsem", and waits until the replica is
// in sync and every sentinel knows the replica and the other two sentinels,
// so that a failover can happen (about three seconds).
func startSharedSentinel() (func(), error) {
	var procs []*redisProc
	stop := func() {
		for _, p := range procs {
			p.stop()
		}
	}
	fail := func(err error) (func(), error) {
		stop()
		return nil, err
	}
	master, err := startRedisProc(false, "--repl-diskless-sync-delay", "0")
	if err != nil {
		return fail(err)
	}
	procs = append(procs, master)
	replica, err := startRedisProc(false, "--replicaof", "127.0.0.1", strconv.Itoa(master.port))
	if err != nil {
		return fail(err)
	}
	procs = append(procs, replica)
	conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d 2\n"+
		"sentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 5000\n", sentinelMaster, master.port)
	var sentinels []*redisProc
	for range 3 {
		s, err := startRedisBin("redis-sentinel", conf, false)
		if err != nil {
			return fail(err)
		}
		procs = append(procs, s)
		sentinels = append(sentinels, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := awaitSentinels(ctx, []*redisProc{replica}, sentinels); err != nil {
		return fail(fmt.Errorf("starting Redis Sentinel: %w", err))
	}
	addrs := make([]string, len(sentinels))
	for i, s := range sentinels {
		addrs[i] = s.addr()
	}
	os.Setenv(envSentinelAddrs, strings.Join(addrs, ","))
	os.Setenv(envSentinelMaster, sentinelMaster)
	return stop, nil
}

func awaitSentinels(ctx context.Context, replicas []*redisProc, sentinels []*redisProc) error {
	for _, replica := range replicas {
		rc := redis.NewClient(&redis.Options{Addr: replica.addr(), MaxRetries: -1})
		err := awaitFiles(ctx, dirs(replica), func() bool {
			info, err := rc.Info(ctx, "replication").Result()
			return err == nil && strings.Contains(info, "master_link_status:up")
		})
		rc.Close()
		if err != nil {
			return fmt.Errorf("replica %s not in sync: %w", replica.addr(), err)
		}
	}
	for _, s := range sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
		err := awaitFiles(ctx, dirs(s), func() bool {
			m, err := sc.Master(ctx, sentinelMaster).Result()
			return err == nil && m["num-other-sentinels"] == strconv.Itoa(len(sentinels)-1) &&
				m["num-slaves"] == strconv.Itoa(len(replicas)) && m["flags"] == "master"
		})
		sc.Close()
		if err != nil {
			return fmt.Errorf("sentinel %s not ready: %w", s.addr(), err)
		}
	}
	return nil
}

// dirs returns the servers' directories, where they write their logs and
// configuration: what awaitFiles watches.
func dirs(procs ...*redisProc) []string {
	d := make([]string, len(procs))
	for i, p := range procs {
		d[i] = p.dir
	}
	return d
}
