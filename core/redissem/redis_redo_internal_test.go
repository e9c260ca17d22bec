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
	for i := range maxRedo + 10 {
		q.push(redo{s: s, id: strconv.Itoa(i), ttl: time.Hour, until: now.Add(time.Hour), orphan: i%2 == 0}, now)
	}
	live := 0
	q.live(now, func(*redo) { live++ })
	if q.n != maxRedo || live != maxRedo || q.orphans != maxRedo/2 {
		t.Fatalf("%d entries, %d live, %d orphans; want %d, %d, %d", q.n, live, q.orphans, maxRedo, maxRedo, maxRedo/2)
	}
}
