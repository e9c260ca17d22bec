// Command keys measures the memory that untrusted keys cost a keyed
// semaphore: the process heap over its baseline after
// many random keys and after large keys, and, with -redis, Redis
// used_memory and key count until the idle keys expire.
//
// From bench/:
//
//	go run ./keys                                  # in-process only
//	go run ./keys -redis 127.0.0.1:7460            # and Redis
//	go run ./keys -http 1500 -keys 0 -big 0        # httpmw keyed by long paths
//
// Each key is acquired once and released at once (the pattern of a client
// sending a new path per request). The figures are in bench/BENCHMARKS.md.
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/httpmw"
)

func main() {
	addr := flag.String("redis", "", "Redis address (host:port); empty: in-process only")
	nSmall := flag.Int("keys", 1_000_000, "random keys of 16 to 64 bytes")
	nBig := flag.Int("big", 10_000, "large keys")
	bigSize := flag.Int("bigsize", 1<<20, "bytes per large key")
	conc := flag.Int("c", 32, "concurrent callers")
	ttl := flag.Duration("ttl", time.Second, "lease TTL (Redis keys expire 1 minute after the last lease end)")
	expiry := flag.Duration("expiry-wait", 3*time.Minute, "how long to wait for Redis keys to expire")
	nHTTP := flag.Int("http", 0, "requests with distinct paths of -pathsize bytes through an httpmw server keyed by path")
	pathSize := flag.Int("pathsize", 900<<10, "bytes per path for -http")
	flag.Parse()
	if *nHTTP > 0 {
		httpRun(*nHTTP, *pathSize)
	}

	fmt.Printf("go %s, GOMAXPROCS %d, %d random keys, %d keys of %d bytes, %d callers\n",
		runtime.Version(), runtime.GOMAXPROCS(0), *nSmall, *nBig, *bigSize, *conc)
	run("local", core.NewLocalKeyed(4), nil, "", *nSmall, *nBig, *bigSize, *conc, 0)
	if *addr == "" {
		return
	}
	c := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: *conc})
	defer c.Close()
	prefix := "keysbench" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	k := redissem.NewKeyed(c, "bench", 4, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(*ttl))
	run("redis", k, c, prefix, *nSmall, *nBig, *bigSize, *conc, *expiry)
}

func run(name string, k *core.Keyed, c *redis.Client, prefix string, nSmall, nBig, bigSize, conc int, expiry time.Duration) {
	defer k.Close()
	base := heap()
	var redisBase int64
	if c != nil {
		redisBase = usedMemory(c)
		fmt.Printf("%s: baseline heap %s, Redis used_memory %s\n", name, mib(base), mib(redisBase))
	} else {
		fmt.Printf("%s: baseline heap %s\n", name, mib(base))
	}

	start := time.Now()
	each(nSmall, conc, func(i int) string {
		var b [24]byte
		_, _ = rand.Read(b[:])
		return fmt.Sprintf("/t/%x", b[:8+i%16])
	}, k)
	report(name, fmt.Sprintf("after %d random keys", nSmall), base, k, c, redisBase, time.Since(start))

	big := make([]byte, bigSize)
	_, _ = rand.Read(big)
	start = time.Now()
	each(nBig, conc, func(i int) string {
		b := make([]byte, len(big))
		copy(b, big)
		binary.BigEndian.PutUint64(b, uint64(i))
		return string(b)
	}, k)
	report(name, fmt.Sprintf("after %d keys of %d bytes", nBig, bigSize), base, k, c, redisBase, time.Since(start))

	if c == nil {
		return
	}
	start = time.Now()
	for {
		n := countKeys(c, prefix)
		used := usedMemory(c)
		if n == 0 || time.Since(start) > expiry {
			fmt.Printf("%s: after %s idle: %d keys under the prefix, Redis used_memory %s (%+.2f MiB over baseline)\n",
				name, time.Since(start).Round(time.Second), n, mib(used), float64(used-redisBase)/(1<<20))
			return
		}
		time.Sleep(5 * time.Second)
	}
}

// each acquires and releases one permit of each of n keys from conc goroutines.
func each(n, conc int, key func(i int) string, k *core.Keyed) {
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				p, err := k.Acquire(ctx, key(i))
				if err != nil {
					log.Fatal(err)
				}
				if err := p.Release(ctx); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()
}

func report(name, what string, base uint64, k *core.Keyed, c *redis.Client, redisBase int64, took time.Duration) {
	h := heap()
	line := fmt.Sprintf("%s: %s (%s): heap %s, %+.2f MiB over baseline, %d keys kept",
		name, what, took.Round(time.Millisecond), mib(h), float64(int64(h)-int64(base))/(1<<20), k.Len())
	if c != nil {
		used := usedMemory(c)
		line += fmt.Sprintf("; Redis used_memory %s (%+.2f MiB)", mib(used), float64(used-redisBase)/(1<<20))
	}
	fmt.Println(line)
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func usedMemory(c *redis.Client) int64 {
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	fmt.Fprintln(os.Stderr, "no used_memory in INFO")
	return 0
}

func countKeys(c *redis.Client, prefix string) int {
	n := 0
	iter := c.Scan(context.Background(), 0, prefix+"*", 10_000).Iterator()
	for iter.Next(context.Background()) {
		n++
	}
	if err := iter.Err(); err != nil {
		log.Fatal(err)
	}
	return n
}

func mib[T int64 | uint64](n T) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

// httpRun sends n requests, each with its own path of size bytes, through
// an httpmw server keyed by the raw path, one connection per request, and
// reports the server process's heap. The key is set with WithKey: httpmw's
// default no longer keys by a client's path (unrouted requests share
// httpmw.UnroutedKey), so without it every request would take one key and
// the run would not measure client-chosen keys at all.
func httpRun(n, size int) {
	k := core.NewLocalKeyed(4)
	defer k.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: httpmw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), k,
		httpmw.WithKey(func(r *http.Request) string { return r.URL.Path }))}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	base := heap()
	pad := strings.Repeat("p", size)
	for i := range n {
		resp, err := c.Get(fmt.Sprintf("http://%s/%d/%s", ln.Addr(), i, pad))
		if err != nil {
			log.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	c.CloseIdleConnections()
	fmt.Printf("httpmw: %d paths of %d bytes: heap %+.2f MiB over baseline, %d keys kept\n",
		n, size, float64(int64(heap())-int64(base))/(1<<20), k.Len())
}
