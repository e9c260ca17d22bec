package servertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelSet is a master, its replica (or replicas) and three sentinels
// (quorum 2, down-after 1 s, ping period 250 ms) started for one test that
// fails the master over on purpose. Addrs are the sentinels' addresses,
// Master the monitored name.
//
// The ping period is also how often a sentinel may reconnect to an
// instance, and a sentinel that follows a switch keeps the time of its last
// attempt on the dead master: with Sentinel's 1 s, its first PING to the new
// master could leave up to 1 s after the switch, so with down-after 1 s it
// sometimes judged the new master down at once and failed it over again,
// to a second replica if it had one (two masters, neither with a replica).
// Sentinel's own ratio of the two (1 s against 30 s) rules that out; 250 ms
// against 1 s restores it.
type SentinelSet struct {
	Addrs  []string
	Master string
	procs  []*redisProc
	data   []*redisProc // the master and its replicas, as started
	sents  []*redisProc
}

// SentinelOption changes the set that StartSentinel starts.
type SentinelOption func(*sentinelConfig)

type sentinelConfig struct {
	link            func(master string) string
	failoverTimeout time.Duration
	replicas        int
}

// WithReplicas gives the master n replicas instead of one, so that one is
// left to replicate from the promoted replica after a crash (as
// redissem.WithReplicaAck(1, …) needs to grant). Sentinel re-points the
// others at the new master as part of the failover.
func WithReplicas(n int) SentinelOption {
	return func(c *sentinelConfig) { c.replicas = n }
}

// WithReplicaLink makes the replica replicate from link(master), the
// address of something in front of the master (a fault proxy that can
// freeze replication), instead of from the master itself. The sentinels'
// failover-timeout is then a minute: within it they leave alone a replica
// that names another master than theirs (past it they would point it at
// the master, around the proxy).
func WithReplicaLink(link func(master string) string) SentinelOption {
	return func(c *sentinelConfig) { c.link, c.failoverTimeout = link, time.Minute }
}

// StartSentinel starts a private Sentinel set, ready to fail over, and
// stops it when the test ends. It skips (or, with CI set, fails) the test
// when redis-server or redis-sentinel is not installed.
func StartSentinel(tb testing.TB, opts ...SentinelOption) *SentinelSet {
	tb.Helper()
	cfg := sentinelConfig{failoverTimeout: 5 * time.Second, replicas: 1}
	for _, o := range opts {
		o(&cfg)
	}
	s := &SentinelSet{Master: sentinelMaster}
	tb.Cleanup(func() {
		for _, p := range s.procs {
			p.stop()
		}
	})
	master, err := startRedisProc(false, "--repl-diskless-sync-delay", "0")
	if err != nil {
		unavailable(tb, "redis-server", err)
	}
	s.procs = append(s.procs, master)
	s.data = append(s.data, master)
	from := master.addr()
	if cfg.link != nil {
		from = cfg.link(from)
	}
	host, port, _ := strings.Cut(from, ":")
	var replicas []*redisProc
	for range max(cfg.replicas, 1) {
		replica, err := startRedisProc(false, "--replicaof", host, port)
		if err != nil {
			tb.Fatal(err)
		}
		s.procs = append(s.procs, replica)
		s.data = append(s.data, replica)
		replicas = append(replicas, replica)
	}
	conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d 2\n"+
		"sentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s %[3]d\n", sentinelMaster, master.port, cfg.failoverTimeout.Milliseconds())
	var sentinels []*redisProc
	for range 3 {
		p, err := startRedisBin("redis-sentinel", conf, false)
		if err != nil {
			unavailable(tb, "redis-sentinel", err)
		}
		s.procs = append(s.procs, p)
		sentinels = append(sentinels, p)
		s.sents = append(s.sents, p)
		s.Addrs = append(s.Addrs, p.addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, p := range sentinels {
		sc := redis.NewClient(&redis.Options{Addr: p.addr(), MaxRetries: -1})
		err := sc.Do(ctx, "SENTINEL", "DEBUG", "ping-period", sentinelPingPeriod.Milliseconds()).Err()
		sc.Close()
		if err != nil {
			tb.Fatalf("servertest: setting the ping period of sentinel %s: %v", p.addr(), err)
		}
	}
	if err := awaitSentinels(ctx, replicas, sentinels); err != nil {
		tb.Fatalf("servertest: starting Redis Sentinel: %v", err)
	}
	return s
}

// sentinelPingPeriod is how often the sentinels of a SentinelSet ping each
// instance, and may reconnect to one (SENTINEL DEBUG ping-period).
const sentinelPingPeriod = 250 * time.Millisecond

// MasterAddr returns the master's address as the first sentinel that
// answers reports it.
func (s *SentinelSet) MasterAddr(ctx context.Context) (string, error) {
	var err error
	for _, a := range s.Addrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: a, MaxRetries: -1})
		var m []string
		m, err = sc.GetMasterAddrByName(ctx, s.Master).Result()
		sc.Close()
		if err == nil {
			return strings.Join(m, ":"), nil
		}
	}
	return "", err
}

// RedisAddrs returns the addresses of the master and its replicas as
// started (the first is the first master), whatever their roles now.
func (s *SentinelSet) RedisAddrs() []string {
	out := make([]string, len(s.data))
	for i, p := range s.data {
		out[i] = p.addr()
	}
	return out
}

// SentinelLog returns the lines that the sentinels logged from since on
// (by their own clock, to the millisecond), each prefixed with the port of
// the sentinel that logged it, in that sentinel's order; a line that cannot
// be read as one is kept.
func (s *SentinelSet) SentinelLog(since time.Time) []string {
	var out []string
	for _, p := range s.sents {
		b, err := os.ReadFile(filepath.Join(p.dir, "redis.log"))
		if err != nil {
			out = append(out, fmt.Sprintf("%d: %v", p.port, err))
			continue
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			// 1234:X 28 Nov 2026 07:37:01.234 # +sdown master …
			if f := strings.Fields(l); len(f) >= 5 {
				at, err := time.ParseInLocation("2 Jan 2006 15:04:05.000", strings.Join(f[1:5], " "), time.Local)
				if err == nil && at.Before(since.Truncate(time.Millisecond)) {
					continue
				}
			}
			out = append(out, fmt.Sprintf("%d: %s", p.port, l))
		}
	}
	return out
}

// Kill kills the server at addr (the master or the replica) with SIGKILL.
func (s *SentinelSet) Kill(addr string) {
	for _, p := range s.procs {
		if p.addr() == addr {
			p.kill()
		}
	}
}

// ClusterSet is a Redis Cluster of masters, each with replicas, started for
// one test that kills nodes on purpose (node timeout 1 s, so a replica is
// promoted about 2 s after its master dies; cluster-require-full-coverage
// no, so the other masters serve meanwhile). Addrs lists the masters first.
type ClusterSet struct {
	Addrs []string
	procs []*redisProc
}

// StartCluster starts a private cluster of masters × (1 + replicas) nodes
// and returns once every node reports it ok and every replica is in sync;
// it is stopped when the test ends.
func StartCluster(tb testing.TB, masters, replicas int) *ClusterSet {
	tb.Helper()
	c := &ClusterSet{}
	tb.Cleanup(func() {
		for _, p := range c.procs {
			p.stop()
		}
	})
	for range masters * (1 + replicas) {
		n, err := startRedisProc(true, "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000",
			"--cluster-require-full-coverage", "no",
			"--repl-diskless-sync-delay", "0")
		if err != nil {
			unavailable(tb, "redis-server", err)
		}
		c.procs = append(c.procs, n)
		c.Addrs = append(c.Addrs, n.addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	all := c.procs
	if err := formCluster(ctx, all[:masters]); err != nil {
		tb.Fatalf("servertest: forming a Redis Cluster: %v", err)
	}
	for i, n := range all[masters:] {
		m := all[i%masters]
		nc := redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1})
		mc := redis.NewClient(&redis.Options{Addr: m.addr(), MaxRetries: -1})
		err := nc.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", m.port).Err()
		var id string
		if err == nil {
			id, err = mc.Do(ctx, "CLUSTER", "MYID").Text()
		}
		if err == nil {
			// REPLICATE fails until the node has learnt of the master.
			err = awaitFiles(ctx, dirs(n), func() bool { return nc.Do(ctx, "CLUSTER", "REPLICATE", id).Err() == nil })
		}
		mc.Close()
		if err == nil {
			err = awaitFiles(ctx, dirs(n), func() bool {
				info, err := nc.Info(ctx, "replication").Result()
				return err == nil && strings.Contains(info, "master_link_status:up")
			})
		}
		nc.Close()
		if err != nil {
			tb.Fatalf("servertest: replica %s of %s: %v", n.addr(), m.addr(), err)
		}
	}
	want := "cluster_known_nodes:" + strconv.Itoa(len(all))
	err := awaitFiles(ctx, dirs(all...), func() bool {
		for _, n := range all {
			nc := redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1})
			info, err := nc.ClusterInfo(ctx).Result()
			nc.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, want) {
				return false
			}
		}
		return true
	})
	if err != nil {
		tb.Fatalf("servertest: cluster not ok: %v", err)
	}
	return c
}

// Pause stops the node at addr with SIGSTOP (a stalled node that keeps its
// connections open), until Resume.
func (c *ClusterSet) Pause(addr string) { c.signal(addr, syscall.SIGSTOP) }

// Resume lets a paused node go on (SIGCONT).
func (c *ClusterSet) Resume(addr string) { c.signal(addr, syscall.SIGCONT) }

func (c *ClusterSet) signal(addr string, sig syscall.Signal) {
	for _, p := range c.procs {
		if p.addr() == addr && p.p != nil {
			_ = p.p.signal(sig)
		}
	}
}

// Kill kills the node at addr with SIGKILL.
func (c *ClusterSet) Kill(addr string) {
	for _, p := range c.procs {
		if p.addr() == addr {
			p.kill()
		}
	}
}
