package redissem_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// maxPairAllocs bounds the allocations of one uncontended Acquire + Release
// on a real redis-server (a separate process, so only this process's
// allocations count): 49 when measured (go-redis's own are about 15 of
// them, Release's deadline, a context, about 8), plus a little slack for
// the background goroutines of the backend and the client. go-redis's
// Script.Run would add about 7 per script call (it boxes the SHA and each
// key): evalSHA builds the command by hand. Raise it only knowingly.
const maxPairAllocs = 51

// TestRedisAllocsUncontended keeps the allocations of the uncontended path
// from growing unnoticed. It counts allocations, never time.
func TestRedisAllocsUncontended(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	defer c.Close()
	s := redissem.New(c, "allocs", 1, redissem.WithKeyPrefix(uniquePrefix(t)))
	defer s.Close()
	ctx := context.Background()
	var fail error
	pair := func() {
		p, err := s.Acquire(ctx)
		if err != nil {
			fail = err
			return
		}
		if err := p.Release(ctx); err != nil {
			fail = err
		}
	}
	pair() // loads the scripts, starts the loop
	n := testing.AllocsPerRun(200, pair)
	if fail != nil {
		t.Fatal(fail)
	}
	t.Logf("%.1f allocations per uncontended acquire+release", n)
	if n > maxPairAllocs {
		t.Errorf("%.1f allocations per uncontended acquire+release, want <= %d", n, maxPairAllocs)
	}
}
