package quorumbench

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// counter is a go-redis hook that counts the commands sent.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// slowProxy forwards to addr and delays every reply by d.
func slowProxy(b *testing.B, addr string, d time.Duration) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	b.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", addr)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, u)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(u, c); _ = u.Close() })
			wg.Go(func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := u.Read(buf)
					if n > 0 {
						time.Sleep(d)
						if _, werr := c.Write(buf[:n]); werr != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				_ = c.Close()
			})
		}
	})
	return l.Addr().String()
}

type setup struct {
	sem interface {
		core.Semaphore
		Close() error
	}
	cnt  *counter
	name string
}

// asGiven wraps a client so that NewQuorum keeps the masters in the order
// given (it sorts plain *redis.Client values by address): the benchmark
// puts the slow master first or last on purpose.
type asGiven struct{ *redis.Client }

// setups starts 3 masters and returns the semaphores to compare.
func setups(b *testing.B, limit int64) []setup {
	var ms []*servertest.RedisServer
	for range 3 {
		ms = append(ms, servertest.StartRedis(b))
	}
	mk := func(addrs ...string) ([]redis.UniversalClient, *counter) {
		cnt := &counter{}
		var cs []redis.UniversalClient
		for _, a := range addrs {
			c := redis.NewClient(&redis.Options{Addr: a, PoolSize: 64})
			c.AddHook(cnt)
			b.Cleanup(func() { _ = c.Close() })
			cs = append(cs, asGiven{c})
		}
		return cs, cnt
	}
	const slow = 2 * time.Millisecond
	var out []setup
	cs, cnt := mk(ms[0].Addr())
	out = append(out, setup{redissem.New(cs[0].(asGiven).Client, "single", limit), cnt, "single-redis"})
	cs, cnt = mk(ms[0].Addr(), ms[1].Addr(), ms[2].Addr())
	out = append(out, setup{redissem.NewQuorum(cs, "q", limit), cnt, "quorum-3"})
	cs, cnt = mk(ms[0].Addr(), ms[1].Addr(), slowProxy(b, ms[2].Addr(), slow))
	out = append(out, setup{redissem.NewQuorum(cs, "qslowlast", limit), cnt, "quorum-3-last-slow"})
	cs, cnt = mk(slowProxy(b, ms[0].Addr(), slow), ms[1].Addr(), ms[2].Addr())
	out = append(out, setup{redissem.NewQuorum(cs, "qslowfirst", limit), cnt, "quorum-3-first-slow"})
	cs, cnt = mk(ms[0].Addr(), ms[1].Addr(), ms[2].Addr())
	out = append(out, setup{redissem.NewAllOf(cs, "all", limit), cnt, "allof-3"})
	for _, s := range out {
		b.Cleanup(func() { _ = s.sem.Close() })
	}
	return out
}

func report(b *testing.B, lat []time.Duration, cmds int64, ops int) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(cmds)/float64(ops), "cmds/op")
}

// BenchmarkUncontended: one goroutine, Acquire then Release, limit 1.
func BenchmarkUncontended(b *testing.B) {
	ctx := context.Background()
	for _, s := range setups(b, 1) {
		b.Run(s.name, func(b *testing.B) {
			p, err := s.sem.Acquire(ctx) // subscribe and warm the pools
			if err != nil {
				b.Fatal(err)
			}
			_ = p.Release(ctx)
			before := s.cnt.n.Load()
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				p, err := s.sem.Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Release(ctx); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			report(b, lat, s.cnt.n.Load()-before, len(lat))
		})
	}
}

// BenchmarkContended: 16 goroutines through a limit of 4, each holding its
// permit for 1ms; p50/p99 are of the wait for a permit.
func BenchmarkContended(b *testing.B) {
	ctx := context.Background()
	for _, s := range setups(b, 4) {
		b.Run(s.name, func(b *testing.B) {
			before := s.cnt.n.Load()
			var mu sync.Mutex
			var lat []time.Duration
			var ops atomic.Int64
			b.SetParallelism(8) // 8 × GOMAXPROCS(2) = 16 goroutines
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					t0 := time.Now()
					p, err := s.sem.Acquire(ctx)
					if err != nil {
						panic(fmt.Sprint(err))
					}
					mine = append(mine, time.Since(t0))
					time.Sleep(time.Millisecond)
					_ = p.Release(ctx)
					ops.Add(1)
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			b.ReportMetric(float64(ops.Load())/time.Since(start).Seconds(), "grants/s")
			report(b, lat, s.cnt.n.Load()-before, len(lat))
		})
	}
}
