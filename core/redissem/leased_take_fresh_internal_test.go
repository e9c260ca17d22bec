package redissem

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/internal/servertest"
)

// takeFresh runs share_take.lua as a process with no entry yet (epoch 0)
// whose head waiter needs need, with configured ("" for none) as the
// configured limit.
func (f takeFleet) takeFresh(pid string, need int64, configured any) []int64 {
	f.t.Helper()
	v, err := scriptShareTake.Run(context.Background(), f.c, []string{f.key}, pid, need, 0, 0, need, need, 10000, 0, 0,
		"owner-"+pid, "ch:"+pid, "", configured).Int64Slice()
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

// TestLeasedTakeScriptCreatesMissingHash: on a semaphore's first use (no
// shares hash), share_take.lua creates the hash as share.lua would, with
// the configured limit, and registers the caller with what its head
// waiter needs; share.lua and share_give.lua then go on from it. It
// leaves the decision to share.lua, writing nothing, when it is not told
// the configured limit, when the head waiter needs more than that limit,
// and for a retried copy. A hash made anew numbers its versions above
// those of the hash it replaces, whether share_take.lua or share.lua
// makes it.
func TestLeasedTakeScriptCreatesMissingHash(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := takeFleet{giveFleet{t: t, c: c, key: "t" + rand.Text()[:10] + "{fresh}:ls"}}
	absent := func(what string, r []int64) {
		t.Helper()
		if len(r) != 1 || r[0] != 0 {
			t.Fatalf("%s: reply %v, want {0}", what, r)
		}
		if n, err := c.Exists(ctx, f.key).Result(); err != nil || n != 0 {
			t.Fatalf("%s: the hash exists (%d, %v), want none", what, n, err)
		}
	}
	absent("a take not told the configured limit", f.takeFresh("a", 1, ""))
	absent("a take whose head waiter needs more than the limit", f.takeFresh("a", 3, 2))

	r := f.takeFresh("a", 1, 2)
	if r[0] != shareNew || r[1] != 1 || r[2] != 2 || r[4] != 1 || r[12] != 0 || r[14] != 1 {
		t.Fatalf("a's take on a missing hash: reply %v, want code %d, share 1, limit 2, epoch 1, contended 0, free 1", r, shareNew)
	}
	all := f.all()
	want := map[string]string{"limit": "2", "q": "", "epoch": "1", "c:a": "ch:a", "o:a": "owner-a"}
	for k, v := range want {
		if got, ok := all[k]; !ok || got != v {
			t.Fatalf("after a's take on a missing hash: %s = %q (present %v), want %q; hash %v", k, got, ok, v, all)
		}
	}
	if s, q, ver := f.entry("a"); s != 1 || q != 0 || ver != r[11] {
		t.Fatalf("a's entry: share %d, qat %d, version %d; want 1, 0, %d", s, q, ver, r[11])
	}
	f.checkSum("after a's take on a missing hash")
	if ttl, err := c.PTTL(ctx, f.key).Result(); err != nil || ttl <= 0 || all["x"] == "" {
		t.Fatalf("the hash's expiry: PTTL %v (%v), x %q; want an expiry, and x", ttl, err, all["x"])
	}

	before := f.all()
	if r := f.takeFresh("a", 1, 2); len(r) != 1 || r[0] != 0 {
		t.Fatalf("a's take, retried: reply %v, want {0}", r)
	}
	for k, v := range f.all() {
		if before[k] != v {
			t.Fatalf("a's take, retried, changed %s: %q -> %q", k, before[k], v)
		}
	}

	// share.lua goes on from the hash: b registers and takes the unit
	// left; c then queues behind nobody and tells a and b.
	if b := f.beat("b", 0, 1); b[0] != shareNew || b[1] != 1 || b[4] != 2 {
		t.Fatalf("b's beat after a's take: reply %v, want code %d, share 1, epoch 2", b, shareNew)
	}
	if cr := f.beat("c", 0, 1); cr[1] != 0 || f.queue() != "c" {
		t.Fatalf("c's beat with the limit held: share %d, queue %q; want 0, \"c\"", cr[1], f.queue())
	}
	f.checkSum("after share.lua's beats")
	// a's give-back by share_give.lua (with callers of its own still
	// queued) hands its unit to c, and queues a.
	_, _, aver := f.entry("a")
	if g := f.give("a", aver, r[4]); g[0] != 1 || g[1] != 0 {
		t.Fatalf("a's give-back: reply %v, want code 1, share 0", g)
	}
	if s, _, _ := f.entry("c"); s != 1 || f.queue() != "a" {
		t.Fatalf("after a's give-back: c's share %d, queue %q; want 1, \"a\"", s, f.queue())
	}
	f.checkSum("after a's give-back")

	// A hash made anew (it expired, or Redis lost it) numbers its versions
	// above those of the hash before it, whichever script makes it.
	remove := func() int64 { // the hash's last version, and the hash gone
		t.Helper()
		last, err := c.HGet(ctx, f.key, "v").Int64()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Del(ctx, f.key).Err(); err != nil {
			t.Fatal(err)
		}
		return last
	}
	last := remove()
	if r := f.takeFresh("d", 1, 2); r[0] != shareNew || r[11] <= last {
		t.Fatalf("d's take on a hash made anew: reply %v, want code %d and a version above %d", r, shareNew, last)
	}
	last = remove()
	if r := f.beat("e", 0, 1); r[0] != shareNew || r[11] <= last {
		t.Fatalf("e's beat on a hash made anew: reply %v, want code %d and a version above %d", r, shareNew, last)
	}
}
