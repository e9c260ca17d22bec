package redissem

import (
	"strconv"
	"testing"
	"time"
)

// TestRedoStore: orphans and released ids share one store and one bound;
// a grant note finds an orphan only, once.
func TestRedoStore(t *testing.T) {
	s := &Semaphore{name: "redo"}
	var q redoRing
	now := time.Now()
	q.push(redo{s: s, id: "o", ttl: time.Hour, until: now.Add(time.Hour), orphan: true}, now)
	q.push(redo{s: s, id: "r", ttl: time.Hour, until: now.Add(time.Hour)}, now)
	if _, ok := q.adoptOrphan(grantNote{id: "r", token: 5}); ok {
		t.Fatal("a released id adopted as an orphan")
	}
	if _, ok := q.adoptOrphan(grantNote{id: "o", token: -2}); ok {
		t.Fatal("an orphan adopted by a note that is no grant")
	}
	if o, ok := q.adoptOrphan(grantNote{id: "o", token: 5}); !ok || o.id != "o" || o.s != s {
		t.Fatalf("adoptOrphan: %+v, %v; want the orphan", o, ok)
	}
	if _, ok := q.adoptOrphan(grantNote{id: "o", token: 5}); ok || q.orphans != 0 {
		t.Fatalf("an orphan adopted twice (%d orphans kept)", q.orphans)
	}
	// Past the bound, released ids go first: orphans stay.
	orphans := 0
	for i := range maxRedo + 10 {
		q.push(redo{s: s, id: strconv.Itoa(i), ttl: time.Hour, until: now.Add(time.Hour), orphan: i%2 == 0}, now)
		if i%2 == 0 {
			orphans++
		}
	}
	live, kept := 0, 0
	q.live(now, func(r *redo) {
		live++
		if r.orphan {
			kept++
		}
	})
	if q.n != maxRedo || live != maxRedo || q.orphans != orphans || kept != orphans {
		t.Fatalf("%d entries, %d live, %d orphans (%d counted); want %d, %d, %d", q.n, live, kept, q.orphans, maxRedo, maxRedo, orphans)
	}
	// All orphans: the oldest goes.
	for i := range maxRedo {
		q.push(redo{s: s, id: "x" + strconv.Itoa(i), ttl: time.Hour, until: now.Add(time.Hour), orphan: true}, now)
	}
	if q.n != maxRedo || q.orphans != maxRedo {
		t.Fatalf("%d entries, %d orphans; want %d of each", q.n, q.orphans, maxRedo)
	}
}
