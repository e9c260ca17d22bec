package redissem_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
)

// TestNoteReleasedNoGrowth: the memory of recent releases (run again after
// a failover) costs no allocation per Release once it holds as many as it
// keeps, whether old ones expire or the bound drops them (re-slicing and
// appending would cost about one allocation per Release). It keeps the
// newest maxRedo (4096) ids within their lease.
func TestNoteReleasedNoGrowth(t *testing.T) {
	// No server: recording a release sends nothing.
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	s := redissem.New(c, "note", 1)
	defer s.Close()

	redissem.NoteReleases(s, "a", time.Hour, 5000)
	if n := redissem.ReplayableReleases(s); n != 4096 {
		t.Fatalf("%d releases to replay after 5000 within their lease, want the bound 4096", n)
	}
	redissem.NoteReleases(s, "b", -1, 3) // expired as soon as recorded
	if n := redissem.ReplayableReleases(s); n != 4096-3 {
		t.Fatalf("%d releases to replay, want 4093: the 3 newest are expired, the 3 oldest dropped", n)
	}
	if raceEnabled {
		return // the race detector allocates
	}
	for _, tc := range []struct {
		name string
		ttl  time.Duration
	}{{"at the bound", time.Hour}, {"expiring", -1}} {
		redissem.NoteReleases(s, "c", tc.ttl, 5000)
		if n := testing.AllocsPerRun(10, func() { redissem.NoteReleases(s, "c", tc.ttl, 1000) }); n != 0 {
			t.Errorf("%s: %.0f allocations per 1000 releases recorded, want 0", tc.name, n)
		}
	}
}
