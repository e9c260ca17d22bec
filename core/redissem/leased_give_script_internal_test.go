package redissem

import (
	"context"
	"crypto/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/internal/servertest"
)

// giveFleet drives share.lua and share_give.lua by hand, as processes of
// limit 1 whose head waiter needs 1, on a real redis-server.
type giveFleet struct {
	t   *testing.T
	c   *redis.Client
	key string
}

// beat runs share.lua's beat for pid with keep units in use (or kept).
func (f giveFleet) beat(pid string, keep int64) []int64 {
	f.t.Helper()
	v, err := scriptShare.Run(context.Background(), f.c, []string{f.key}, 1, pid, "beat", 4, keep, keep,
		10000, 0, 200, 4-keep, 1, "", "ch:"+pid, 1<<40).Int64Slice()
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

// give runs share_give.lua for pid, which keeps nothing in use; known
// and epoch are its entry's, as the process last applied them.
func (f giveFleet) give(pid string, known, epoch int64) []int64 {
	f.t.Helper()
	v, err := scriptShareGive.Run(context.Background(), f.c, []string{f.key}, pid, 4, 0, 0, 4, 1, 10000, known, epoch).Int64Slice()
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

// entry returns pid's share, qat and version as the hash holds them.
func (f giveFleet) entry(pid string) (share, qat, ver int64) {
	f.t.Helper()
	v, err := f.c.HGet(context.Background(), f.key, "p:"+pid).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	n := strings.Split(v, ":")
	share, _ = strconv.ParseInt(n[0], 10, 64)
	qat, _ = strconv.ParseInt(n[7], 10, 64)
	ver, _ = strconv.ParseInt(n[8], 10, 64)
	return share, qat, ver
}

func (f giveFleet) queue() string {
	f.t.Helper()
	q, err := f.c.HGet(context.Background(), f.key, "q").Result()
	if err != nil && err != redis.Nil {
		f.t.Fatal(err)
	}
	return q
}

func (f giveFleet) all() map[string]string {
	f.t.Helper()
	m, err := f.c.HGetAll(context.Background(), f.key).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

// TestLeasedGiveScriptHandsOffAsShareDoes: limit 1, a holds the unit, b
// then c queue. a's give-back by share_give.lua hands the unit to b, the
// head, tells b by its channel, and queues a behind c, as share.lua would:
// a run of share.lua afterwards finds the same queue. A retried copy
// changes nothing, and what share_give.lua cannot decide (nothing to give,
// a stale epoch, units handed since the version applied) it leaves to
// share.lua ({0}, nothing written). The shares never sum above 1, and the
// give-back keeps the key alive past the giver's lease.
func TestLeasedGiveScriptHandsOffAsShareDoes(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	t.Cleanup(func() { _ = c.Close() })
	f := giveFleet{t: t, c: c, key: "t" + rand.Text()[:10] + "{give}:ls"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sub := c.Subscribe(ctx, "ch:b")
	t.Cleanup(func() { _ = sub.Close() })
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}

	a := f.beat("a", 0)
	if a[1] != 1 {
		t.Fatalf("a alone: share %d, want 1", a[1])
	}
	f.beat("b", 0)
	f.beat("c", 0)
	a = f.beat("a", 1) // a keeps its unit in use
	if a[1] != 1 || a[12] != 1 {
		t.Fatalf("a in use 1: share %d, contended %d; want 1 and 1", a[1], a[12])
	}
	if q := f.queue(); q != "b c" {
		t.Fatalf("queue %q after b and c starved, want \"b c\"", q)
	}
	if r := f.give("c", 1<<40, 0); r[0] != 0 {
		t.Fatalf("c, queued, with nothing to give: reply %v, want {0}", r)
	}
	_, _, aver := f.entry("a")
	if r := f.give("a", aver, a[4]+1); r[0] != 0 {
		t.Fatalf("a with a stale epoch: reply %v, want {0}", r)
	}
	if r := f.give("a", aver-1, a[4]); r[0] != 0 {
		t.Fatalf("a, its share handed to since the version it applied: reply %v, want {0}", r)
	}

	// The key's expiry, as if set long ago: the give-back extends it.
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	soon := now.Add(time.Second).UnixMilli()
	if err := c.HSet(ctx, f.key, "x", soon).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.PExpireAt(ctx, f.key, time.UnixMilli(soon)).Err(); err != nil {
		t.Fatal(err)
	}
	r := f.give("a", aver, a[4])
	if ttl := c.PTTL(ctx, f.key).Val(); ttl < 60*time.Second {
		t.Fatalf("key expires in %v after a's give-back, want its lease (10s) and a minute", ttl)
	}
	if r[0] != 1 || r[1] != 0 || r[12] != 1 {
		t.Fatalf("a's give-back: reply %v, want code 1, share 0, contended 1", r)
	}
	bs, bq, bver := f.entry("b")
	as, aq, _ := f.entry("a")
	cs, _, _ := f.entry("c")
	if bs != 1 || bq != 0 || as != 0 || aq == 0 || as+bs+cs > 1 {
		t.Fatalf("after a's give-back: a %d (qat %d), b %d (qat %d), c %d; want b to hold the unit, a queued", as, aq, bs, bq, cs)
	}
	if q := f.queue(); q != "c a" {
		t.Fatalf("queue %q after the give-back, want \"c a\"", q)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "b:" + strconv.Itoa(1*2+1) + ":" + strconv.FormatInt(bver, 10); msg.Payload != want {
		t.Fatalf("note to b %q, want %q", msg.Payload, want)
	}

	before := f.all()
	if r := f.give("a", aver, a[4]); r[0] != 0 {
		t.Fatalf("a retried copy: reply %v, want {0}", r)
	}
	after := f.all()
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("a retried copy changed %s: %q -> %q", k, v, after[k])
		}
	}

	// share.lua, run by another process, keeps the queue as written.
	if _, err := scriptShare.Run(ctx, c, []string{f.key}, 1, "z", "stats", 0, 0, 0, 10000, 0, 200, 0, 0).Int64Slice(); err != nil {
		t.Fatal(err)
	}
	if q := f.queue(); q != "c a" {
		t.Fatalf("queue %q after share.lua ran, want \"c a\"", q)
	}
}
