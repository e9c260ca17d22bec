package redissem

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/internal/servertest"
)

// twinFleets are two copies of one fleet of limit 2: the same processes
// ask in the same order, by share.lua on full and by share_take.lua on
// lean. A process is named by one letter; on each copy its pid has the
// copy's prefix ("f" or "l").
type twinFleets struct {
	t          *testing.T
	c          *redis.Client
	full, lean takeFleet
	sub        *redis.PubSub
	marker     string
}

func newTwinFleets(t *testing.T) *twinFleets {
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	t.Cleanup(func() { _ = c.Close() })
	tag := rand.Text()[:10]
	tw := &twinFleets{t: t, c: c, marker: "ch:marker" + tag,
		full: takeFleet{giveFleet{t: t, c: c, key: "tf" + tag + "{twin}:ls"}},
		lean: takeFleet{giveFleet{t: t, c: c, key: "tl" + tag + "{twin}:ls"}}}
	tw.sub = c.PSubscribe(context.Background(), "ch:*")
	t.Cleanup(func() { _ = tw.sub.Close() })
	if _, err := tw.sub.Receive(context.Background()); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	return tw
}

// both runs share.lua's beat for process p on both copies.
func (tw *twinFleets) both(p string, keep, need int64) {
	tw.full.beat("f"+p, keep, need)
	tw.lean.beat("l"+p, keep, need)
}

// ask makes process p ask for what its head waiter (need) lacks: a beat
// of share.lua on full, share_take.lua on lean (epoch 0 registers p). It
// fails unless both replies agree on the code, the share, contended and
// whether soon is set, and returns lean's reply.
func (tw *twinFleets) ask(p string, keep, need, known, epoch int64) []int64 {
	tw.t.Helper()
	f := tw.full.beat("f"+p, keep, need)
	l := tw.lean.lean(scriptShareTake, "l"+p, keep, need, known, epoch)
	if len(l) == 1 {
		tw.t.Fatalf("%s's ask: share_take.lua replied {0}, share.lua %v", p, f)
	}
	if f[0] != l[0] || f[1] != l[1] || f[12] != l[12] || (f[13] > 0) != (l[13] > 0) {
		tw.t.Fatalf("%s's ask: share_take.lua replied %v, share.lua %v: code, share, contended or soon differ", p, l, f)
	}
	return l
}

// same fails unless both copies hold the same queue, and for each process
// the same share, need, word (told) and place in the queue or none; and
// unless they published the same notes since the last call (versions
// aside, which count writes).
func (tw *twinFleets) same(when string) {
	tw.t.Helper()
	state := func(f takeFleet, prefix string) string {
		all := f.all()
		var out []string
		for k, v := range all {
			if p, ok := strings.CutPrefix(k, "p:"+prefix); ok {
				n := strings.Split(v, ":")
				out = append(out, fmt.Sprintf("%s share %s need %s told %s queued %v", p, n[0], n[4], n[9], n[7] != "0"))
			}
		}
		slices.Sort(out)
		return strings.Join(out, "; ") + "; queue [" + strings.ReplaceAll(" "+all["q"], " "+prefix, " ") + "]"
	}
	if f, l := state(tw.full, "f"), state(tw.lean, "l"); f != l {
		tw.t.Fatalf("%s: by share.lua %s\nby share_take.lua %s", when, f, l)
	}
	// The notes published before the marker, in both copies.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tw.c.Publish(ctx, tw.marker, "m").Err(); err != nil {
		tw.t.Fatal(err)
	}
	notes := map[byte][]string{}
	for {
		m, err := tw.sub.ReceiveMessage(ctx)
		if err != nil {
			tw.t.Fatal(err)
		}
		if m.Channel == tw.marker {
			break
		}
		n := strings.Split(m.Payload, ":") // pid:share*2+told:version
		notes[n[0][0]] = append(notes[n[0][0]], n[0][1:]+":"+n[1])
	}
	if f, l := fmt.Sprint(notes['f']), fmt.Sprint(notes['l']); f != l {
		tw.t.Fatalf("%s: notes by share.lua %s, by share_take.lua %s", when, f, l)
	}
}

// TestLeasedTakeScriptQueuesAsShareDoes: a process whose head waiter needs
// more than is free asks by share_take.lua with the effect of a beat of
// share.lua, on a real redis-server. a holds the whole limit; c, then b
// (both new, registering by their ask) and d (registered, with no share)
// queue in arrival order, which is not the order of their names. The first to queue tells a, which holds a share,
// that others wait; the later ones tell nobody, a being told already. A
// give-back by a then serves the head alike. When part of the need is
// free, the asker takes it and queues for the rest, as share.lua's
// hand-off does.
func TestLeasedTakeScriptQueuesAsShareDoes(t *testing.T) {
	t.Run("queue", func(t *testing.T) {
		tw := newTwinFleets(t)
		tw.both("a", 2, 2)
		d := tw.lean.beat("ld", 0, 0)
		tw.full.beat("fd", 0, 0)
		tw.same("a holds the limit, d registered")

		if r := tw.ask("c", 0, 1, 0, 0); r[0] != shareNew || r[1] != 0 || r[12] != 0 || r[13] <= 0 {
			t.Fatalf("c's ask: reply %v, want code %d, share 0, contended 0, soon set", r, shareNew)
		}
		tw.same("c queued")
		if q := tw.lean.queue(); q != "lc" {
			t.Fatalf("queue %q after c's ask, want \"lc\"", q)
		}
		if r := tw.ask("b", 0, 1, 0, 0); r[12] != 1 {
			t.Fatalf("b's ask behind c: reply %v, want contended 1", r)
		}
		tw.same("b queued behind c")
		tw.ask("d", 0, 1, d[11], d[4])
		tw.same("d queued behind b")
		// share.lua, run by another process, orders the queue by the
		// arrival times in the entries: it keeps the queue as written.
		if _, err := scriptShare.Run(context.Background(), tw.c, []string{tw.lean.key}, 2, "lz", "stats", 0, 0, 0, 10000, 0, 200, 0, 0).Int64Slice(); err != nil {
			t.Fatal(err)
		}
		if q := tw.lean.queue(); q != "lc lb ld" {
			t.Fatalf("queue %q, want \"lc lb ld\"", q)
		}
		tw.lean.checkSum("after three asks")

		// a gives one unit back: c, the head, gets it on both copies.
		for _, f := range []struct {
			tf  takeFleet
			pid string
		}{{tw.full, "fa"}, {tw.lean, "la"}} {
			all := f.tf.all()
			n := strings.Split(all["p:"+f.pid], ":")
			var epoch, ver int64
			fmt.Sscan(n[6], &epoch)
			fmt.Sscan(n[8], &ver)
			if r := f.tf.lean(scriptShareGive, f.pid, 1, 1, ver, epoch); len(r) == 1 || r[1] != 1 {
				t.Fatalf("%s's give-back of one unit: reply %v, want share 1", f.pid, r)
			}
		}
		tw.same("a gave one unit back")
		if q := tw.lean.queue(); q != "lb ld" {
			t.Fatalf("queue %q after a's give-back, want \"lb ld\"", q)
		}
	})
	t.Run("part free", func(t *testing.T) {
		tw := newTwinFleets(t)
		tw.both("a", 1, 1)
		tw.same("a holds one unit of two")
		if r := tw.ask("b", 0, 2, 0, 0); r[1] != 1 || r[13] <= 0 {
			t.Fatalf("b's ask for 2 with 1 free: reply %v, want share 1, soon set", r)
		}
		tw.same("b took the free unit and queued for the other")
		tw.lean.checkSum("after b's ask")
	})
}
