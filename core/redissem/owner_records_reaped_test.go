package redissem_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// A process's owner record, and a note, outlive neither their time nor the
// state: the scripts reap an owner record 2 lease TTLs after its last write
// and a note with its id's tombstone, and keep the counts right meanwhile.
// The scripts run on a clock of the test's (ScriptSources).
func TestOwnerRecordsAndNotesAreReaped(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	defer c.Close()
	tag := fmt.Sprintf("ownerreap:%d:{s}:", time.Now().UnixNano())
	keys := []string{tag + "m", tag + "h", tag + "q", tag + "p", tag + "f", tag + "r"}
	clock := tag + "clock"
	defer c.Del(ctx, append(keys, clock)...)
	a, r := redissem.ScriptSources(true, clock)
	acquire, release := redis.NewScript(a), redis.NewScript(r)
	now := time.Now().UnixMicro()
	run := func(sc *redis.Script, args ...any) {
		t.Helper()
		c.Del(ctx, clock)
		c.RPush(ctx, clock, now/1_000_000, now%1_000_000)
		if err := sc.Run(ctx, c, keys, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	const ttl = 1000 // ms: owner records last 2 s
	acq := func(id string, extra ...any) {
		t.Helper()
		run(acquire, append([]any{3, tag + "ch", id, 1, ttl, 0, 0, "0"}, extra...)...)
	}
	field := func(f string) string { return c.HGet(ctx, keys[0], f).Val() }
	counts := func() {
		t.Helper()
		v := c.HMGet(ctx, keys[0], "hn", "qn", "xn").Val()
		var n int64
		for _, x := range v {
			var k int64
			if s, ok := x.(string); ok {
				fmt.Sscan(s, &k)
			}
			n += k
		}
		if z := c.ZCard(ctx, keys[1]).Val(); z != n+1 {
			t.Fatalf("T holds %d ids, the counts say %d", z-1, n)
		}
	}

	acq("P1.1", "", "pod-1")
	acq("P2.1_n", "backup of db-3", "pod-2")
	acq("P1.2") // the record is there: no owner sent
	if field("#P1.") != "opod-1" || field("#P2.") != "opod-2" || field("@P2.1_n") == "" {
		t.Fatalf("owner records %q, %q, note %q: want opod-1, opod-2 and the note", field("#P1."), field("#P2."), field("@P2.1_n"))
	}
	counts()
	for _, id := range []string{"P1.1", "P2.1_n", "P1.2"} {
		run(release, 3, tag+"ch", id, 500)
	}
	counts()

	now += 1_500_000 // past the tombstones, not the owner records
	acq("P3.1")
	if field("@P2.1_n") != "" || field("#P1.") == "" || field("#P2.") == "" {
		t.Fatalf("after 1.5 s: note %q, records %q, %q: want the note gone, the records kept", field("@P2.1_n"), field("#P1."), field("#P2."))
	}
	counts()

	now += 600_000 // past the owner records (2 s, and SLACK)
	run(release, 3, tag+"ch", "P3.1", 500)
	if field("#P1.") != "" || field("#P2.") != "" {
		t.Fatalf("after 2.1 s: records %q, %q: want both gone", field("#P1."), field("#P2."))
	}
	counts()
}
