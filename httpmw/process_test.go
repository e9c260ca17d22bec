package httpmw_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/httpmw"
	"github.com/distsem/distsem/internal/servertest"
)

// The cross-process test re-executes this test binary as a server: these
// variables tell the child what to serve.
const (
	envChild  = "HTTPMW_TEST_CHILD"  // "limited" or "unlimited"
	envPrefix = "HTTPMW_TEST_PREFIX" // Redis key prefix of this run
	envLimit  = "HTTPMW_TEST_LIMIT"
)

// enter counts a request in, fleet-wide, and keeps the highest count seen.
var enter = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
return n`)

// serveChild runs the child server when this binary was started as one. It
// prints its address, serves until its stdin closes, and reports true.
func serveChild() bool {
	mode := os.Getenv(envChild)
	if mode == "" {
		return false
	}
	prefix := os.Getenv(envPrefix)
	limit, _ := strconv.ParseInt(os.Getenv(envLimit), 10, 64)
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("DISTSEM_REDIS_ADDR")})
	sem := redissem.NewKeyed(rdb, "xproc", 1000, redissem.WithKeyPrefix(prefix),
		redissem.WithLimits(map[string]int64{"GET /work": limit}))
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithoutCancel(r.Context())
		if err := enter.Run(ctx, rdb, []string{prefix + "inflight", prefix + "max"}).Err(); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		time.Sleep(10 * time.Millisecond) // the work: hold the permit a while
		rdb.Decr(ctx, prefix+"inflight")
		io.WriteString(w, "ok")
	})
	mux := http.NewServeMux()
	if mode == "limited" {
		mux.Handle("GET /work", httpmw.Handler(work, sem, httpmw.WithMaxWait(5*time.Second)))
	} else {
		mux.Handle("GET /work", work)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	fmt.Println("ADDR", ln.Addr())
	io.Copy(io.Discard, os.Stdin) // until the parent closes it
	srv.Shutdown(context.Background())
	sem.Close()
	rdb.Close()
	os.Exit(0)
	return true
}

// startChild starts one server process and returns its base URL.
func startChild(t *testing.T, mode, addr, prefix string, limit int) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+mode, envPrefix+"="+prefix,
		envLimit+"="+strconv.Itoa(limit), "DISTSEM_REDIS_ADDR="+addr)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %s: %v", mode, err)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ADDR ") {
		t.Fatalf("child said %q, %v", line, err)
	}
	return "http://" + strings.TrimSpace(strings.TrimPrefix(line, "ADDR "))
}

// fleetRun starts two server processes sharing one Redis and drives them
// with concurrent clients; it returns the highest number of requests seen
// in flight across both, and the status codes received.
func fleetRun(t *testing.T, mode string, limit int) (int, map[int]int) {
	addr := servertest.RedisAddr(t)
	prefix := "httpmwtest:" + rand.Text()[:10] + ":"
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() {
		ctx := context.Background() // t.Context is done by now
		keys, _ := rdb.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		rdb.Close()
	})
	urls := []string{startChild(t, mode, addr, prefix, limit), startChild(t, mode, addr, prefix, limit)}

	const clients, each = 16, 8
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	for i := range clients {
		wg.Go(func() {
			for j := range each {
				resp, err := client.Get(urls[(i+j)%2] + "/work")
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				codes[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	max, err := rdb.Get(context.Background(), prefix+"max").Int()
	if err != nil {
		t.Fatal(err)
	}
	if mode == "limited" {
		// Every permit is back: check with a process of our own.
		sem := redissem.NewKeyed(rdb, "xproc", 1000, redissem.WithKeyPrefix(prefix))
		defer sem.Close()
		if st, err := sem.Stats(context.Background(), "GET /work"); err != nil || st.InUse != 0 || st.Limit != int64(limit) {
			t.Errorf("stats after the run = %+v, %v; want limit %d, none in use", st, err, limit)
		}
	}
	return max, codes
}

func TestLimitHoldsAcrossProcesses(t *testing.T) {
	const limit = 3
	max, codes := fleetRun(t, "limited", limit)
	t.Logf("limited: max in flight %d, codes %v", max, codes)
	if max > limit {
		t.Fatalf("%d requests in flight across two processes, limit %d", max, limit)
	}
	if max < limit || codes[200] == 0 {
		t.Fatalf("max in flight %d, codes %v: the route was never saturated, the check proves nothing", max, codes)
	}
}

// TestCounterSeesOverload is the control: the same fleet without the
// limiter exceeds the limit, so the check above can fail.
func TestCounterSeesOverload(t *testing.T) {
	const limit = 3
	max, codes := fleetRun(t, "unlimited", limit)
	t.Logf("unlimited: max in flight %d, codes %v", max, codes)
	if max <= limit {
		t.Fatalf("without a limiter only %d were in flight at once: the counter cannot see an overload", max)
	}
}
