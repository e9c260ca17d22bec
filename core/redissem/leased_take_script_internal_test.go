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

// takeFleet drives share.lua, share_take.lua and share_give.lua by hand,
// as processes of a semaphore of limit 2, on a real redis-server.
type takeFleet struct{ giveFleet }

// beat runs share.lua's beat for pid, with keep units kept and a head
// waiter that needs need.
func (f takeFleet) beat(pid string, keep, need int64) []int64 {
	f.t.Helper()
	v, err := scriptShare.Run(context.Background(), f.c, []string{f.key}, 2, pid, "beat", need, keep, keep,
		10000, 0, 200, need, need, "", "ch:"+pid, 1<<40).Int64Slice()
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

// lean runs sc (share_take.lua or share_give.lua) for pid as beat's
// arguments say, with the version and epoch that pid last applied (epoch
// 0: none, a take registers it).
func (f takeFleet) lean(sc *redis.Script, pid string, keep, need, known, epoch int64) []int64 {
	f.t.Helper()
	v, err := sc.Run(context.Background(), f.c, []string{f.key}, pid, need, keep, keep, need, need, 10000, known, epoch,
		"owner-"+pid, "ch:"+pid).Int64Slice()
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

// checkSum fails unless the kept sum is current and equals the shares'.
func (f takeFleet) checkSum(when string) {
	f.t.Helper()
	all := f.all()
	var sum int64
	for k, v := range all {
		if strings.HasPrefix(k, "p:") {
			n, _ := strconv.ParseInt(strings.Split(v, ":")[0], 10, 64)
			sum += n
		}
	}
	if want := all["v"] + ":" + strconv.FormatInt(sum, 10); all["s"] != want {
		f.t.Fatalf("%s: kept sum %q, want %q (v:sum of the entries)", when, all["s"], want)
	}
}

// TestLeasedTakeScriptTakesFreeCapacityAsShareDoes: limit 2, a and b
// registered with no share. share_take.lua gives each the unit its head
// waiter lacks from free capacity, as share.lua's hand-off would, and
// keeps the sum of the shares current; a retried copy, a stale epoch and
// a queued process each make it reply {0} and write nothing, and share.lua then
// decides. A take over a stale sum reads every entry and makes the sum
// current. share_give.lua and share.lua keep the sum current too. A
// process with no entry registers by its take, with the next epoch, its
// owner and its channel, once.
func TestLeasedTakeScriptTakesFreeCapacityAsShareDoes(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	t.Cleanup(func() { _ = c.Close() })
	f := takeFleet{giveFleet{t: t, c: c, key: "t" + rand.Text()[:10] + "{take}:ls"}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	unchanged := func(what string, r []int64) {
		t.Helper()
		before := f.all()
		if len(r) != 1 || r[0] != 0 {
			t.Fatalf("%s: reply %v, want {0}", what, r)
		}
		for k, v := range f.all() {
			if before[k] != v {
				t.Fatalf("%s changed %s: %q -> %q", what, k, before[k], v)
			}
		}
	}

	a := f.beat("a", 0, 0)
	b := f.beat("b", 0, 0)
	if a[1] != 0 || b[1] != 0 {
		t.Fatalf("registered with no waiter: shares %d and %d, want 0", a[1], b[1])
	}
	f.checkSum("after share.lua registered a and b")

	r := f.lean(scriptShareTake, "a", 0, 1, a[11], a[4])
	if r[0] != 1 || r[1] != 1 || r[12] != 0 {
		t.Fatalf("a's take of 1: reply %v, want code 1, share 1, contended 0", r)
	}
	if s, q, ver := f.entry("a"); s != 1 || q != 0 || ver != r[11] {
		t.Fatalf("a's entry after its take: share %d, qat %d, version %d; want 1, 0, %d", s, q, ver, r[11])
	}
	f.checkSum("after a's take")
	unchanged("a's take, retried", f.lean(scriptShareTake, "a", 0, 1, a[11], a[4]))
	aver := r[11]
	unchanged("a's take with a stale epoch", f.lean(scriptShareTake, "a", 1, 2, aver, a[4]+1))

	r = f.lean(scriptShareTake, "b", 0, 1, b[11], b[4])
	if r[0] != 1 || r[1] != 1 {
		t.Fatalf("b's take of 1: reply %v, want code 1, share 1", r)
	}
	f.checkSum("after b's take")

	// A writer that changes a share without the sum (a process of an
	// earlier version) takes a new version: the sum is then not trusted.
	if err := c.HIncrBy(ctx, f.key, "v", 1).Err(); err != nil {
		t.Fatal(err)
	}
	r = f.lean(scriptShareGive, "b", 0, 0, r[11], b[4])
	if r[0] != 1 || r[1] != 0 {
		t.Fatalf("b's give-back: reply %v, want code 1, share 0", r)
	}
	if all := f.all(); all["s"] == "" || strings.HasPrefix(all["s"], all["v"]+":") {
		t.Fatalf("kept sum %q at version %q after a give-back over a stale sum, want it left stale", all["s"], all["v"])
	}
	// Over a stale sum the take reads every entry: the unit b gave back is
	// free, and the sum is current again.
	if r := f.lean(scriptShareTake, "a", 1, 2, aver, a[4]); r[0] != 1 || r[1] != 2 || r[12] != 0 {
		t.Fatalf("a's take of a second unit over a stale sum: reply %v, want code 1, share 2, contended 0", r)
	}
	f.checkSum("after a's take over a stale sum")
	a = f.beat("a", 1, 2) // share.lua keeps what a's take gave
	if a[1] != 2 {
		t.Fatalf("a's beat needing 2: share %d, want 2", a[1])
	}

	// With the limit held, b's beat queues it; a's give-back of one unit
	// hands it to b and keeps the sum.
	b = f.beat("b", 0, 1)
	if q := f.queue(); q != "b" || b[1] != 0 {
		t.Fatalf("b starved: queue %q, share %d; want \"b\", 0", q, b[1])
	}
	unchanged("b's take while it is queued", f.lean(scriptShareTake, "b", 0, 1, b[11], b[4]))
	_, _, aver = f.entry("a")
	if r := f.lean(scriptShareGive, "a", 1, 0, aver, a[4]); r[0] != 1 || r[1] != 1 {
		t.Fatalf("a's give-back of one unit to b: reply %v, want code 1, share 1", r)
	}
	if s, _, _ := f.entry("b"); s != 1 {
		t.Fatalf("b's share after a's give-back: %d, want 1", s)
	}
	f.checkSum("after a's give-back to b")

	// n registers by its take, with the next epoch, once a unit is free.
	bs, _, bver := f.entry("b")
	if r := f.lean(scriptShareGive, "b", 0, 0, bver, b[4]); r[0] != 1 || r[1] != 0 || bs != 1 {
		t.Fatalf("b's give-back of its unit: reply %v (share before %d), want code 1, share 0", r, bs)
	}
	epoch, err := c.HGet(ctx, f.key, "epoch").Int64()
	if err != nil {
		t.Fatal(err)
	}
	r = f.lean(scriptShareTake, "n", 0, 1, 0, 0)
	if r[0] != shareNew || r[1] != 1 || r[4] != epoch+1 {
		t.Fatalf("n's registering take: reply %v, want code %d, share 1, epoch %d", r, shareNew, epoch+1)
	}
	all := f.all()
	if all["c:n"] != "ch:n" || all["o:n"] != "owner-n" || all["epoch"] != strconv.FormatInt(epoch+1, 10) {
		t.Fatalf("after n registered: channel %q, owner %q, epoch %q; want ch:n, owner-n, %d", all["c:n"], all["o:n"], all["epoch"], epoch+1)
	}
	f.checkSum("after n registered")
	unchanged("n's registering take, retried", f.lean(scriptShareTake, "n", 0, 1, 0, 0))
}
