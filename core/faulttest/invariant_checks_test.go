package faulttest

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/testwait"
)

// redisState is what Redis records for one semaphore.
type redisState struct {
	Used    int64 // the used count the scripts keep
	Held    int64 // the sum of the weights of the recorded holders
	Holders int64 // the number of recorded holders
	Queued  int64 // the number of queued waiters
	Tokens  []int64
}

// readState reads a semaphore's keys directly. It is the only place of the
// suite that knows the key layout of core/lua/lib.lua: prefix{name}:m is the
// state hash (field "used", and per id a field "#id", "h<weight>:<token>:…"
// for a holder), :q is the queue, whose last member is a sentinel "".
func readState(ctx context.Context, c redis.Cmdable, prefix, name string) (redisState, error) {
	tag := prefix + "{" + name + "}:"
	var st redisState
	m, err := c.HGetAll(ctx, tag+"m").Result()
	if err != nil {
		return st, err
	}
	st.Used, _ = strconv.ParseInt(m["used"], 10, 64)
	for f, v := range m {
		if !strings.HasPrefix(f, "#") || !strings.HasPrefix(v, "h") {
			continue
		}
		fs := strings.Split(v[1:], ":")
		n, _ := strconv.ParseInt(fs[0], 10, 64)
		var tk int64
		if len(fs) > 1 {
			tk, _ = strconv.ParseInt(fs[1], 10, 64)
		}
		st.Held += n
		st.Holders++
		st.Tokens = append(st.Tokens, tk)
	}
	if st.Queued, err = c.ZCount(ctx, tag+"q", "-inf", "(9007199254740992").Result(); err != nil {
		return st, err
	}
	return st, nil
}

// checkCounts asserts that the used count agrees with the recorded holders
// (a count above them is capacity lost for good), as the
// keys are, and again after a Stats call on sem has reaped expired leases
// (and, where core does so, repaired the count).
func checkCounts(t testing.TB, sem *redissem.Semaphore, c *redis.Client, prefix, name string) redisState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var st redisState
	for i, when := range []string{"as found", "after Stats"} {
		if i == 1 {
			// Stats may be refused for a while after a fault (a circuit
			// breaker cooling down): retry it.
			for {
				_, err := sem.Stats(ctx)
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("Stats: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		var err error
		if st, err = readState(ctx, c, prefix, name); err != nil {
			t.Fatalf("read state: %v", err)
		}
		if st.Used != st.Held {
			t.Errorf("capacity lost (%s): used = %d, but the %d holders weigh %d", when, st.Used, st.Holders, st.Held)
		}
	}
	return st
}

// awaitFree waits until all limit permits can be taken at once with
// TryAcquire (so nothing is held or queued, and no capacity is lost), then
// gives them back. It fails after bound and returns how long it took.
func awaitFree(t testing.TB, sem *redissem.Semaphore, limit int64, bound time.Duration) time.Duration {
	t.Helper()
	begin := time.Now()
	var last error
	for time.Since(begin) < bound {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		p, err := sem.TryAcquire(ctx, core.WithWeight(limit))
		cancel()
		if err == nil {
			_ = p.ReleaseDetached(context.Background(), 5*time.Second)
			return time.Since(begin)
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("all %d permits still not free %v later: %v", limit, bound, last)
	return time.Since(begin)
}

// awaitWaiting waits until Stats reports n queued waiters.
func awaitWaiting(t testing.TB, sem *redissem.Semaphore, n int64, bound time.Duration) {
	t.Helper()
	testwait.Until(t, bound, fmt.Sprintf("Stats never reported %d queued waiters", n), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		st, err := sem.Stats(ctx)
		return err == nil && st.Waiting == n
	})
}

// interval is a span during which a caller believed it held weight permits,
// on the machine's clock (every process of a test runs on one machine).
type interval struct {
	from, to int64 // UnixNano
	weight   int64
}

// peak returns the most permits believed held at once.
func peak(ivs []interval) int64 {
	type ev struct{ at, d int64 }
	evs := make([]ev, 0, 2*len(ivs))
	for _, iv := range ivs {
		evs = append(evs, ev{iv.from, iv.weight}, ev{iv.to, -iv.weight})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].at != evs[j].at {
			return evs[i].at < evs[j].at
		}
		return evs[i].d < evs[j].d
	})
	var cur, top int64
	for _, e := range evs {
		cur += e.d
		top = max(top, cur)
	}
	return top
}

// busy returns the permit-time held within [from, to], in nanoseconds.
func busy(ivs []interval, from, to int64) int64 {
	var sum int64
	for _, iv := range ivs {
		a, b := max(iv.from, from), min(iv.to, to)
		if b > a {
			sum += (b - a) * iv.weight
		}
	}
	return sum
}

// footprint is the goroutine count and live heap after a GC.
type footprint struct {
	goroutines int
	heap       uint64
}

// measure returns the footprint; the goroutines that proxies run for their
// open connections (four each: the pool of a client decides how many stay
// open) do not count.
func measure(pxs ...*faultproxy.Proxy) footprint {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	n := runtime.NumGoroutine()
	for _, px := range pxs {
		n -= 4 * px.Conns()
	}
	return footprint{n, ms.HeapAlloc}
}

// awaitFlat waits (up to bound, for bounded clean-up to finish) until the
// goroutines are back to base and asserts the heap did not grow by more
// than 8 MiB. It returns the last footprint.
func awaitFlat(t testing.TB, base footprint, bound time.Duration, pxs ...*faultproxy.Proxy) footprint {
	t.Helper()
	begin := time.Now()
	f := measure(pxs...)
	for f.goroutines > base.goroutines && time.Since(begin) < bound {
		time.Sleep(50 * time.Millisecond)
		f = measure(pxs...)
	}
	if f.goroutines > base.goroutines {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines %v after the fault, %d before:\n%s", f.goroutines, bound, base.goroutines, buf[:runtime.Stack(buf, true)])
	}
	if f.heap > base.heap+8<<20 {
		t.Errorf("heap grew from %d to %d bytes", base.heap, f.heap)
	}
	return f
}

// result is what a timed call returned.
type result struct {
	p       *core.Permit
	err     error
	elapsed time.Duration // from the call's start
	done    time.Time
}

// call runs f in a goroutine and returns a channel that gets its result.
func call(f func() (*core.Permit, error)) <-chan result {
	ch := make(chan result, 1)
	begin := time.Now()
	go func() {
		p, err := f()
		ch <- result{p, err, time.Since(begin), time.Now()}
	}()
	return ch
}

// await returns the result of ch if the call answered within bound of its
// start (otherwise it reports an error), and ok false if it has not answered
// by bound from now: the call is still running then; collect it later with
// drain, after healing the fault.
func await(t testing.TB, what string, ch <-chan result, bound time.Duration) (result, bool) {
	t.Helper()
	return awaitFrom(t, what, ch, time.Time{}, bound)
}

// awaitFrom is await with the bound counted from since (the call's start if
// since is zero).
func awaitFrom(t testing.TB, what string, ch <-chan result, since time.Time, bound time.Duration) (result, bool) {
	t.Helper()
	wait := bound
	if !since.IsZero() {
		wait = max(0, bound-time.Since(since))
	}
	select {
	case r := <-ch:
		took := r.elapsed
		if !since.IsZero() {
			took = r.done.Sub(since)
		}
		if took > bound {
			t.Errorf("%s: answered after %v, want within %v", what, took, bound)
		}
		return r, true
	case <-time.After(wait):
		t.Errorf("%s: no answer within %v", what, bound)
		return result{}, false
	}
}

// drain waits (bounded) for a call that overran and releases what it got.
func drain(t testing.TB, what string, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		t.Logf("%s answered after %v: %v", what, r.elapsed, r.err)
		release(r.p)
		return r
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: no answer 60s after the heal", what)
		return result{}
	}
}

func release(p *core.Permit) {
	if p != nil {
		_ = p.ReleaseDetached(context.Background(), 5*time.Second)
	}
}

// pct returns the q-quantile of ds.
func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
