package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/adaptive"
	"github.com/distsem/distsem/core/adaptive/redisstore"
)

var names atomic.Int64

// uniqueName returns a semaphore name no other test uses.
func uniqueName(t *testing.T) string {
	return fmt.Sprintf("adaptive-%d-%d", time.Now().UnixNano(), names.Add(1))
}

func mini(t *testing.T) (*miniredis.Miniredis, *redis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { c.Close() })
	return m, c
}

func TestSyncCountsOncePerProcessAndWindowAndElectsOne(t *testing.T) {
	m, c := mini(t)
	m.SetTime(time.Unix(1000, 0))
	s := redisstore.New(c, uniqueName(t))
	ctx := t.Context()
	w := adaptive.Window{Samples: 10, Latency: 50 * time.Millisecond, Failed: 1, TimedOut: 2}
	req := func(proc string) adaptive.SyncRequest {
		return adaptive.SyncRequest{Process: proc, Length: time.Second, Window: 999, Samples: w}
	}
	for _, proc := range []string{"a", "a", "b"} { // a's sync repeated, as go-redis may resend it
		if _, err := s.Sync(ctx, req(proc)); err != nil {
			t.Fatal(err)
		}
	}
	m.SetTime(time.Unix(1001, 100))
	r1, err := s.Sync(ctx, adaptive.SyncRequest{Process: "b", Length: time.Second, Window: 1000})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.Sync(ctx, adaptive.SyncRequest{Process: "a", Length: time.Second, Window: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !r1.Elected || r2.Elected {
		t.Fatalf("elected: b %v, a %v; want b only", r1.Elected, r2.Elected)
	}
	want := adaptive.Window{Samples: 20, Latency: 100 * time.Millisecond, Failed: 2, TimedOut: 4}
	if r1.Aggregate != want {
		t.Fatalf("aggregate %+v, want %+v (a counted once)", r1.Aggregate, want)
	}
	if r1.Window != 1000 || !r1.Now.Equal(time.Unix(1001, 0).Add(100)) && r1.Now.Unix() != 1001 {
		t.Fatalf("window %d at %v, want 1000 at 1001s", r1.Window, r1.Now)
	}
	// b's sync repeated: still elected, with the same aggregate.
	if r3, err := s.Sync(ctx, adaptive.SyncRequest{Process: "b", Length: time.Second, Window: 1000}); err != nil || !r3.Elected || r3.Aggregate != want {
		t.Fatalf("repeated sync: %+v, %v", r3, err)
	}
}

func TestSyncPicksTheWindowFromRedisTime(t *testing.T) {
	m, c := mini(t)
	m.SetTime(time.Unix(5000, 0))
	s := redisstore.New(c, uniqueName(t))
	for _, n := range []int64{0, 17, 6000} {
		r, err := s.Sync(t.Context(), adaptive.SyncRequest{Process: "p", Length: time.Second, Window: n})
		if err != nil {
			t.Fatal(err)
		}
		if r.Window != 4999 {
			t.Fatalf("window %d for a request of %d, want 4999", r.Window, n)
		}
	}
}

func TestSaveKeepsTheLatestState(t *testing.T) {
	m, c := mini(t)
	m.SetTime(time.Unix(2000, 0))
	s := redisstore.New(c, uniqueName(t))
	ctx := t.Context()
	for _, st := range []adaptive.State{{Window: 10, Applied: 5}, {Window: 9, Applied: 99}, {Window: 10, Applied: 98}} {
		if err := s.Save(ctx, time.Second, st); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.Sync(ctx, adaptive.SyncRequest{Process: "p", Length: time.Second, Window: 1999})
	if err != nil {
		t.Fatal(err)
	}
	if !r.HasState || r.State.Applied != 5 || r.State.Window != 10 {
		t.Fatalf("state %+v (has %v), want window 10, limit 5", r.State, r.HasState)
	}
}

func TestKeysHaveTheSemaphoresHashTag(t *testing.T) {
	m, c := mini(t)
	m.SetTime(time.Unix(3000, 0))
	name := uniqueName(t)
	s := redisstore.New(c, name, redisstore.WithKeyPrefix("app:"))
	if _, err := s.Sync(t.Context(), adaptive.SyncRequest{Process: "p", Length: time.Second, Window: 2999}); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(t.Context(), time.Second, adaptive.State{Window: 1}); err != nil {
		t.Fatal(err)
	}
	for _, k := range m.Keys() {
		if !strings.HasPrefix(k, "app:{"+name+"}:adaptive:1000:") {
			t.Errorf("key %q outside the semaphore's hash tag", k)
		}
	}
}

func TestBadSamplesAreRefused(t *testing.T) {
	_, c := mini(t)
	s := redisstore.New(c, uniqueName(t))
	for _, w := range []adaptive.Window{{Samples: 1, Latency: -time.Millisecond}, {Samples: -1}, {Samples: 1, TimedOut: 2}} {
		_, err := s.Sync(t.Context(), adaptive.SyncRequest{Process: "p", Length: time.Second, Samples: w})
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("Sync(%+v) = %v, want ErrInvalidArgument", w, err)
		}
	}
}

func TestUnreachableRedisIsUnavailable(t *testing.T) {
	m, c := mini(t)
	m.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	s := redisstore.New(c, uniqueName(t))
	if _, err := s.Sync(ctx, adaptive.SyncRequest{Process: "p", Length: time.Second}); !errors.Is(err, core.ErrUnavailable) {
		t.Errorf("Sync = %v, want ErrUnavailable", err)
	}
	if err := s.Save(ctx, time.Second, adaptive.State{Window: 1}); !errors.Is(err, core.ErrUnavailable) {
		t.Errorf("Save = %v, want ErrUnavailable", err)
	}
}
