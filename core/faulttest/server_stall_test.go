package faulttest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/testwait"
)

// TestStall stalls Redis with DEBUG SLEEP for longer than the client's read
// timeout (300 ms here) while an Acquire (or a TryAcquire) is in flight, so
// that go-redis re-sends the script and Redis runs every copy once the stall
// ends. A "mid" stall (450 ms) ends while a retry still
// waits for its reply, so the call may succeed; a "long" one (2 s) outlasts
// every retry. Afterwards the used count must agree with the holders and
// every permit must come back.
func TestStall(t *testing.T) {
	for _, sleep := range []struct {
		name string
		d    time.Duration
	}{{"mid", 450 * time.Millisecond}, {"long", 2 * time.Second}} {
		for _, try := range []bool{false, true} {
			what := "Acquire"
			if try {
				what = "TryAcquire"
			}
			t.Run(what+"/"+sleep.name, func(t *testing.T) { stall(t, try, what+"/"+sleep.name, sleep.d) })
		}
	}
}

func stall(t *testing.T, try bool, what string, sleep time.Duration) {
	const (
		limit       = 4
		ttl         = 2 * time.Second
		readTimeout = 300 * time.Millisecond
	)
	scenario := "stall/" + what
	srv := newServer(t)
	pfx, name := prefix(t), "stall"
	// A short read timeout (the default is 3s) keeps the scenario short; the
	// retries are go-redis's default 3.
	c := newClient(t, srv.addr(), func(o *redis.Options) { o.ReadTimeout = readTimeout })
	sem := redissem.New(c, name, limit, redissem.WithKeyPrefix(pfx), redissem.WithDefaultLeaseTTL(ttl))
	defer sem.Close()
	checker := newClient(t, srv.addr())
	bg := context.Background()
	warm, err := sem.Acquire(bg)
	if err != nil {
		t.Fatal(err)
	}
	release(warm)

	sleeper := newClient(t, srv.addr(), func(o *redis.Options) { o.ReadTimeout = 10 * time.Second; o.MaxRetries = -1 })
	slept := make(chan error, 1)
	go func() { slept <- sleeper.Do(bg, "DEBUG", "SLEEP", sleep.Seconds()).Err() }()
	// Wait until the server is stalled: a PING with a short timeout fails.
	probe := newClient(t, srv.addr(), func(o *redis.Options) { o.ReadTimeout = 50 * time.Millisecond; o.MaxRetries = -1 })
	testwait.Until(t, sleep+10*time.Second, "the server did not stall", func() bool { return probe.Ping(bg).Err() != nil })
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	begin := time.Now()
	var p *core.Permit
	if try {
		p, err = sem.TryAcquire(ctx)
	} else {
		p, err = sem.Acquire(ctx)
	}
	figure(t, scenario, "answered", time.Since(begin), "err", errString(err), "granted", p != nil)
	if err := <-slept; err != nil {
		t.Fatalf("DEBUG SLEEP: %v (the server needs enable-debug-command)", err)
	}
	release(p)
	st := checkCounts(t, sem, checker, pfx, name)
	figure(t, scenario, "used_after_release", st.Used, "holders_after_release", st.Holders)
	free := awaitFree(t, sem, limit, ttl+slack)
	figure(t, scenario, "all_permits_free_after", free)
	checkCounts(t, sem, checker, pfx, name)
}
