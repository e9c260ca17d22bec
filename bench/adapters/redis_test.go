package adapters_test

import (
	"context"
	"crypto/rand"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/httpmw"
	"github.com/distsem/distsem/internal/servertest"
)

// measure runs b.N calls of do on conc goroutines (a closed loop: a steady
// load of conc requests in flight) and reports the p50 and p99 latency of
// one call in microseconds.
func measure(b *testing.B, conc int, do func()) {
	lat := make([][]time.Duration, conc)
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range conc {
		n := b.N / conc
		if w < b.N%conc {
			n++
		}
		lat[w] = make([]time.Duration, 0, n)
		wg.Go(func() {
			for range n {
				start := time.Now()
				do()
				lat[w] = append(lat[w], time.Since(start))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))]) / 1e3 }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// redisCalls returns the commands processed and the script calls (EVAL
// and EVALSHA) counted by the server so far.
func redisCalls(b *testing.B, rdb *redis.Client) (commands, scripts int64) {
	info, err := rdb.Info(context.Background(), "stats", "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			commands, _ = strconv.ParseInt(v, 10, 64)
		}
		for _, cmd := range []string{"cmdstat_eval:", "cmdstat_evalsha:"} {
			if v, ok := strings.CutPrefix(line, cmd); ok {
				v, _, _ = strings.Cut(strings.TrimPrefix(v, "calls="), ",")
				n, _ := strconv.ParseInt(v, 10, 64)
				scripts += n
			}
		}
	}
	return commands, scripts
}

func redisSem(b *testing.B) (*redis.Client, *core.Keyed) { return redisSemLimit(b, 1<<20) }

func redisSemLimit(b *testing.B, limit int64) (*redis.Client, *core.Keyed) {
	rdb := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(b), PoolSize: 64})
	prefix := "benchadapters:" + rand.Text()[:8] + ":"
	sem := redissem.NewKeyed(rdb, "bench", limit, redissem.WithKeyPrefix(prefix))
	b.Cleanup(func() {
		sem.Close()
		ctx := context.Background()
		if keys, _ := rdb.Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		rdb.Close()
	})
	return rdb, sem
}

// BenchmarkRedisHTTP measures httpmw with the Redis backend, handler
// called directly: the latency is what the middleware adds (the handler
// does nothing). It also reports Redis commands and scripts per request.
func BenchmarkRedisHTTP(b *testing.B) {
	rdb, sem := redisSem(b)
	h := httpmw.Handler(okHandler, sem)
	req := httptest.NewRequest("GET", "/work", nil)
	req.Pattern = "GET /work"
	for _, conc := range []int{1, 8, 32} {
		b.Run("ping/conc="+strconv.Itoa(conc), func(b *testing.B) {
			measure(b, conc, func() { rdb.Ping(context.Background()) })
		})
		b.Run("httpmw/conc="+strconv.Itoa(conc), func(b *testing.B) {
			c0, s0 := redisCalls(b, rdb)
			measure(b, conc, func() { h.ServeHTTP(nopWriter{http.Header{}}, req) })
			c1, s1 := redisCalls(b, rdb)
			// Commands run by the scripts count too; -1 for the INFO itself.
			b.ReportMetric(float64(c1-c0-1)/float64(b.N), "server-cmds/op")
			b.ReportMetric(float64(s1-s0)/float64(b.N), "scripts/op")
		})
	}
}

// BenchmarkRedisHTTPSaturated is BenchmarkRedisHTTP with a limit of 4
// and 32 requests in flight, so that most requests wait: with the request
// adapters' bounds (WithMaxWait) and with sqlmw's defaults (WaitForever,
// no bound on the waiters, no Observer).
func BenchmarkRedisHTTPSaturated(b *testing.B) {
	rdb, sem := redisSemLimit(b, 4)
	req := httptest.NewRequest("GET", "/work", nil)
	req.Pattern = "GET /work"
	for _, tc := range []struct {
		name string
		opts []httpmw.Option
	}{
		{"maxwait=1s", []httpmw.Option{httpmw.WithMaxWait(time.Second)}},
		{"waitforever", []httpmw.Option{httpmw.WithMaxWait(admit.WaitForever), httpmw.WithMaxWaiting(math.MaxInt)}},
	} {
		h := httpmw.Handler(okHandler, sem, tc.opts...)
		b.Run(tc.name+"/conc=32", func(b *testing.B) {
			c0, s0 := redisCalls(b, rdb)
			measure(b, 32, func() { h.ServeHTTP(nopWriter{http.Header{}}, req) })
			c1, s1 := redisCalls(b, rdb)
			b.ReportMetric(float64(c1-c0-1)/float64(b.N), "server-cmds/op")
			b.ReportMetric(float64(s1-s0)/float64(b.N), "scripts/op")
		})
	}
}

// BenchmarkRedisHTTPPaced is the same under an open-loop load: requests
// start at a fixed rate whatever the latency, as real traffic does.
func BenchmarkRedisHTTPPaced(b *testing.B) {
	rdb, sem := redisSem(b)
	h := httpmw.Handler(okHandler, sem)
	req := httptest.NewRequest("GET", "/work", nil)
	req.Pattern = "GET /work"
	for _, tc := range []struct {
		name string
		rate int
		do   func()
	}{
		{"2xping/rate=1000", 1000, func() { rdb.Ping(context.Background()); rdb.Ping(context.Background()) }},
		{"httpmw/rate=1000", 1000, func() { h.ServeHTTP(nopWriter{http.Header{}}, req) }},
		{"2xping/rate=4000", 4000, func() { rdb.Ping(context.Background()); rdb.Ping(context.Background()) }},
		{"httpmw/rate=4000", 4000, func() { h.ServeHTTP(nopWriter{http.Header{}}, req) }},
	} {
		rate := tc.rate
		b.Run(tc.name, func(b *testing.B) {
			lat := make([]time.Duration, b.N)
			var wg sync.WaitGroup
			start := time.Now()
			for i := range b.N {
				time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
				wg.Go(func() {
					t := time.Now()
					tc.do()
					lat[i] = time.Since(t)
				})
			}
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
			b.ReportMetric(float64(lat[int(0.99*float64(len(lat)-1))])/1e3, "p99-µs")
		})
	}
}

// BenchmarkRedisHTTPEndToEnd measures whole requests over loopback HTTP,
// bare and limited; the difference of the two is the latency added.
func BenchmarkRedisHTTPEndToEnd(b *testing.B) {
	_, sem := redisSem(b)
	mux := http.NewServeMux()
	mux.Handle("GET /bare", okHandler)
	mux.Handle("GET /limited", httpmw.Handler(okHandler, sem))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	get := func(url string) func() {
		return func() {
			resp, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	for _, conc := range []int{1, 8} {
		for _, route := range []string{"bare", "limited"} {
			b.Run(route+"/conc="+strconv.Itoa(conc), func(b *testing.B) {
				measure(b, conc, get(srv.URL+"/"+route))
			})
		}
	}
}
