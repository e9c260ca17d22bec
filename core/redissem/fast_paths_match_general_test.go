package redissem_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// TestFastPathsMatchGeneralCode runs random acquires and releases (by the
// holder and by id) on a real Redis, each one twice from the same state and
// the same clock: once by the acquire and release scripts as core sends
// them (their fast paths first), and once by the general code alone. The
// fast paths share their decisions and counts with the general code (the
// blocks and expressions of lua/inline.lua); this checks what they do not
// share: when they may answer, and which writes they make. The replies, every key's content and
// expiry, and what each run published must be the same. It also checks that
// each fast path was taken, and that the general code ran in its stead in
// other cases, so that neither side is compared only with itself.
func TestFastPathsMatchGeneralCode(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	defer c.Close()
	fast, general := map[string]int{}, map[string]int{}
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			d := newDiffRun(t, ctx, c, seed)
			defer d.close()
			for step := range 1200 {
				d.step(step)
			}
			t.Logf("limit %d; fast paths taken: %v; general code: %v", d.limit, d.fast, d.general)
			for k, n := range d.fast {
				fast[k] += n
			}
			for k, n := range d.general {
				general[k] += n
			}
		})
	}
	for _, k := range []string{"grant", "queue", "release", "handoff"} {
		if fast[k] < 50 {
			t.Errorf("the %s fast path ran %d times in all: the comparison did not cover it", k, fast[k])
		}
	}
	for _, k := range []string{"acquire", "release"} {
		if general[k] < 50 {
			t.Errorf("the general %s code ran %d times in all: the comparison did not cover it", k, general[k])
		}
	}
}

type diffRun struct {
	t             *testing.T
	ctx           context.Context
	c             *redis.Client
	rnd           *rand.Rand
	tag, clock    string
	keys          []string
	chans         []string // mine, listened to, nobody hears; the last two also as shard channels
	sub, ssub     *redis.PubSub
	fastA, fastR  *redis.Script
	slowA, slowR  *redis.Script
	limit         int64
	now           int64 // µs
	ids           []string
	seq           int
	fast, general map[string]int
}

func newDiffRun(t *testing.T, ctx context.Context, c *redis.Client, seed uint64) *diffRun {
	tag := fmt.Sprintf("fastdiff:%d:{s%d}:", time.Now().UnixNano(), seed)
	d := &diffRun{t: t, ctx: ctx, c: c, rnd: rand.New(rand.NewPCG(seed, 7)), tag: tag, clock: tag + "clock",
		keys:  []string{tag + "m", tag + "h", tag + "q", tag + "p", tag + "f", tag + "r"},
		chans: []string{tag + "mine", tag + "heard", tag + "deaf", tag + "heard{s}", tag + "deaf{s}"},
		limit: int64(1 + seed%3), now: time.Now().UnixMicro(),
		fast: map[string]int{}, general: map[string]int{}}
	fa, fr := redissem.ScriptSources(true, d.clock)
	sa, sr := redissem.ScriptSources(false, d.clock)
	d.fastA, d.fastR, d.slowA, d.slowR = redis.NewScript(fa), redis.NewScript(fr), redis.NewScript(sa), redis.NewScript(sr)
	// A channel with '{' is a Cluster shard channel to the scripts
	// (SPUBLISH, SHARDNUMSUB); a standalone server serves those too.
	d.sub = c.Subscribe(ctx, d.chans[1], tag+"marker")
	d.ssub = c.SSubscribe(ctx, d.chans[3], tag+"marker{s}")
	for _, ps := range []*redis.PubSub{d.sub, d.sub, d.ssub, d.ssub} {
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func (d *diffRun) close() {
	d.sub.Close()
	d.ssub.Close()
	d.c.Del(d.ctx, append(d.keys, d.clock)...)
}

// step picks an operation, runs it both ways and compares.
func (d *diffRun) step(step int) {
	// The clock: mostly small steps (nothing due), sometimes past leases,
	// waiters' liveness or tombstones, or the keys' expiry.
	switch r := d.rnd.IntN(100); {
	case r < 90:
		d.now += d.rnd.Int64N(3000)
	case r < 98:
		d.now += d.rnd.Int64N(3_000_000)
	default:
		d.now += d.rnd.Int64N(90_000_000)
	}
	var op string
	var args []any
	if d.rnd.IntN(100) < 55 || len(d.ids) == 0 {
		op = "acquire"
		id := d.pickID(20)
		w := int64(1)
		if d.rnd.IntN(10) == 0 {
			w = 1 + d.rnd.Int64N(d.limit+1) // sometimes above the limit
		}
		ttl := []int64{1000, 5000, 60000}[d.rnd.IntN(3)]
		try := d.flag(15)
		deadline := int64(0)
		if d.rnd.IntN(10) == 0 {
			deadline = d.now + d.rnd.Int64N(2000) - 1000
		}
		args = []any{d.limit, d.chans[d.rnd.IntN(len(d.chans))], id, w, ttl, try, deadline, d.flag(10)}
		// Sometimes a note (a hostile one too) and an owner record to
		// store, as core sends them: the general code alone runs then.
		if d.rnd.IntN(5) == 0 {
			note := []string{"", "backup of db-3", "|,#'h1:2:3\x00"}[d.rnd.IntN(3)]
			owner := []string{"", "host:42", "o'|#x:1"}[d.rnd.IntN(3)]
			args = append(args, note, owner)
		}
	} else {
		op = "release"
		id := d.pickID(5)
		if h := d.holders(); len(h) > 0 && d.rnd.IntN(100) < 70 {
			id = h[d.rnd.IntN(len(h))]
		}
		args = []any{d.limit, d.chans[d.rnd.IntN(len(d.chans))], id, []int64{1000, 4000}[d.rnd.IntN(2)]}
		if d.rnd.IntN(5) == 0 {
			args = append(args, "1") // by id (ReleaseID)
		}
	}
	fs, ss := d.fastA, d.slowA
	if op == "release" {
		fs, ss = d.fastR, d.slowR
	}
	snap := d.snapshot()
	a := d.run(fs, args)
	d.restore(snap)
	b := d.run(ss, args)
	general := a.general
	a.general, b.general = 0, 0
	if !reflect.DeepEqual(a, b) {
		d.t.Fatalf("step %d, %s %v: the fast paths and the general code differ\nwith fast paths: %+v\ngeneral code:    %+v", step, op, args, a, b)
	}
	if general == 0 {
		d.fast[fastKind(op, a)]++
	} else {
		d.general[op]++
	}
}

// pickID returns a new id (newPct percent of the time) or one used before:
// a retry, a late copy, the release of a holder or of a waiter.
func (d *diffRun) pickID(newPct int) string {
	if len(d.ids) == 0 || d.rnd.IntN(100) < newPct {
		// Ids of two processes (bases P1 and P2, lua/inline.lua's BASE),
		// some with a note (NOTED).
		d.seq++
		id := []string{"P1.", "P2."}[d.rnd.IntN(2)] + strconv.Itoa(d.seq)
		if d.rnd.IntN(4) == 0 {
			id += "_n"
		}
		d.ids = append(d.ids, id)
		return id
	}
	// Mostly recent ids: those are the live holders and waiters.
	n := min(len(d.ids), 12)
	return d.ids[len(d.ids)-1-d.rnd.IntN(n)]
}

// holders returns the ids that hold a permit, by their records.
func (d *diffRun) holders() []string {
	var ids []string
	for f, v := range d.c.HGetAll(d.ctx, d.keys[0]).Val() {
		if strings.HasPrefix(f, "#") && strings.HasPrefix(v, "h") {
			ids = append(ids, f[1:])
		}
	}
	slices.Sort(ids) // map order would make the run depend on more than its seed
	return ids
}

func (d *diffRun) flag(pct int) string {
	if d.rnd.IntN(100) < pct {
		return "1"
	}
	return "0"
}

func fastKind(op string, o outcome) string {
	v, _ := o.reply.([]any)
	if op == "release" {
		if notes, _ := v[3].([]any); len(notes) > 0 || len(o.published) > 0 {
			return "handoff"
		}
		return "release"
	}
	if len(v) > 0 && v[0] == int64(2) {
		return "queue"
	}
	return "grant"
}

// outcome is everything a run changed or answered.
type outcome struct {
	reply     any
	hash      map[string]string
	ends      []redis.Z
	queue     []redis.Z
	pinned    string
	expiry    []int64
	published map[string][]string
	general   int64 // ECHO calls in the run: 0 when a fast path answered
}

func (d *diffRun) run(sc *redis.Script, args []any) outcome {
	ctx, c := d.ctx, d.c
	c.Del(ctx, d.clock)
	c.RPush(ctx, d.clock, d.now/1_000_000, d.now%1_000_000)
	before := d.echoCount()
	v, err := sc.Run(ctx, c, d.keys, args...).Result()
	var o outcome
	o.general = d.echoCount() - before
	if err != nil {
		o.reply = "error: " + err.Error()
	} else {
		o.reply = v
	}
	o.hash = c.HGetAll(ctx, d.keys[0]).Val()
	o.ends = c.ZRangeWithScores(ctx, d.keys[1], 0, -1).Val()
	o.queue = c.ZRangeWithScores(ctx, d.keys[2], 0, -1).Val()
	o.pinned = c.Get(ctx, d.keys[3]).Val()
	for _, k := range d.keys[:3] {
		o.expiry = append(o.expiry, c.PExpireTime(ctx, k).Val().Milliseconds())
	}
	// What the run published on the channels somebody listens to, up to
	// a marker published after it on each subscription.
	o.published = d.drain(d.sub, "marker", false, o.published)
	o.published = d.drain(d.ssub, "marker{s}", true, o.published)
	return o
}

// drain collects what ps received until the marker it publishes now.
func (d *diffRun) drain(ps *redis.PubSub, marker string, shard bool, got map[string][]string) map[string][]string {
	if shard {
		d.c.SPublish(d.ctx, d.tag+marker, "end")
	} else {
		d.c.Publish(d.ctx, d.tag+marker, "end")
	}
	for {
		m, err := ps.ReceiveMessage(d.ctx)
		if err != nil {
			d.t.Fatal(err)
		}
		if m.Channel == d.tag+marker {
			return got
		}
		if got == nil {
			got = map[string][]string{}
		}
		got[m.Channel] = append(got[m.Channel], m.Payload)
	}
}

// echoCount reads the server's count of ECHO calls (only the general code
// of ScriptSources' fast variants sends ECHO).
func (d *diffRun) echoCount() int64 {
	info := d.c.Info(d.ctx, "commandstats").Val()
	_, rest, ok := strings.Cut(info, "cmdstat_echo:calls=")
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
	return n
}

type keySnap struct {
	dump string
	at   int64 // PEXPIRETIME, or -1
	ok   bool
}

func (d *diffRun) snapshot() []keySnap {
	out := make([]keySnap, len(d.keys))
	for i, k := range d.keys {
		s, err := d.c.Dump(d.ctx, k).Result()
		if err == redis.Nil {
			continue
		}
		if err != nil {
			d.t.Fatal(err)
		}
		out[i] = keySnap{dump: s, at: d.c.PExpireTime(d.ctx, k).Val().Milliseconds(), ok: true}
	}
	return out
}

func (d *diffRun) restore(snap []keySnap) {
	for i, k := range d.keys {
		d.c.Del(d.ctx, k)
		if !snap[i].ok {
			continue
		}
		args := []any{"RESTORE", k, 0, snap[i].dump, "REPLACE"}
		if snap[i].at > 0 {
			args = []any{"RESTORE", k, snap[i].at, snap[i].dump, "REPLACE", "ABSTTL"}
		}
		if err := d.c.Do(d.ctx, args...).Err(); err != nil {
			d.t.Fatal(err)
		}
	}
}
