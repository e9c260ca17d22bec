package redissem

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestWaiterIndexInStep: the waiters' one index stays in step through
// every way a waiter leaves it (its grant note, its caller giving up, an
// outage), and each semaphore's heartbeat lists its own queued waiters
// only.
func TestWaiterIndexInStep(t *testing.T) {
	// No server: nothing here sends a script (the lease is long, so the
	// loop beats no semaphore during the test).
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	b := newRedisBackend("New", c, buildConfig("New", takesNone, []Option{WithDefaultLeaseTTL(time.Hour)}))
	defer b.close()
	const nsem, per = 50, 20
	var sems []*Semaphore
	bySem := make(map[*Semaphore][]*redisWaiter)
	for i := range nsem {
		sems = append(sems, b.semaphore("w"+strconv.Itoa(i), 1, false))
	}
	for i := range nsem * per {
		s := sems[i%nsem]
		w := &redisWaiter{s: s, id: b.newID(false), ttl: time.Hour, ch: make(chan grantNote, 1)}
		if err := b.addWaiter(w); err != nil {
			t.Fatal(err)
		}
		b.queued(w, -1)
		bySem[s] = append(bySem[s], w)
	}
	check := func(when string) {
		t.Helper()
		b.mu.Lock()
		defer b.mu.Unlock()
		linked := 0
		for s, tr := range b.sems {
			n := 0
			for w := tr.waiting.head; w != nil; w = w.next {
				if w.s != s || w.in != &tr.waiting || b.waiters[w.id] != w {
					t.Fatalf("%s: waiter %s linked in the list of %s, or not indexed by id", when, w.id, s.name)
				}
				n++
			}
			if n != tr.waiting.n {
				t.Fatalf("%s: %s lists %d waiters, counts %d", when, s.name, n, tr.waiting.n)
			}
			linked += n
		}
		if linked != len(b.waiters) {
			t.Fatalf("%s: %d waiters by id, %d queued by semaphore", when, len(b.waiters), linked)
		}
	}
	check("queued")
	if n := b.sems[sems[0]].waiting.n; n != per {
		t.Fatalf("%d waiters listed for one semaphore, want %d", n, per)
	}

	var notes []grantNote
	for _, w := range bySem[sems[0]] {
		notes = append(notes, grantNote{id: w.id, token: 7})
	}
	b.deliver(notes)
	for _, w := range bySem[sems[0]] {
		if n := <-w.ch; n.token != 7 {
			t.Fatalf("note %+v, want token 7", n)
		}
	}
	check("granted")

	for _, w := range bySem[sems[1]][:per/2] {
		if !b.removeWaiter(w) || b.removeWaiter(w) {
			t.Fatal("removeWaiter: want true, then false")
		}
	}
	check("removed")
	if n := b.sems[sems[1]].waiting.n; n != per/2 {
		t.Fatalf("%d waiters left listed, want %d", n, per/2)
	}

	b.mu.Lock()
	b.failWaiters()
	b.mu.Unlock()
	check("outage")
	if len(b.waiters) != 0 {
		t.Fatalf("%d waiters left after the outage", len(b.waiters))
	}
	if n := <-bySem[sems[2]][0].ch; n.token != noteOutage {
		t.Fatalf("note %+v, want the outage", n)
	}
}
