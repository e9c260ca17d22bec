package redissem

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// run runs one script on s's keys with ARGV = limit, channel, args...,
// and delivers the grants its reply carries for this process's waiters
// (the in-process hand-off that skips pub/sub). The round trip is bounded
// by ctx and the operation timeout, and refused at once while the breaker
// is open. A failed round trip may have lost a reply that carried grants,
// and so may a repeated one (go-redis retried it), so both make the renewal
// loop resync this semaphore's waiters at once.
//
// go-redis's retries stay on: every script is idempotent per id, so a copy
// that runs twice has the effect of one, and a retry on a fresh connection
// can still answer within the operation timeout.
func (s *Semaphore) run(ctx context.Context, sc *redis.Script, limit int64, args ...any) (reply, error) {
	return s.runScript(ctx, sc, true, limit, args...)
}

// runScript is run; an ungated call (a renewal, a leave at Close) is never
// refused by the breaker. ctx bounds the whole call, its retries included:
// its deadline, the caller's own or one that this package set for the call
// (see bound), is the caller's as far as the breaker is concerned (classify).
func (s *Semaphore) runScript(ctx context.Context, sc *redis.Script, gated bool, limit int64, args ...any) (reply, error) {
	b := s.b
	sent := time.Now()
	if gated && !b.brk.allow(sent) {
		return reply{}, errBreakerOpen
	}
	// Until the user's rights are known, the call checks them first
	// (redis_rights.go), within the call's one operation timeout: a check
	// that gets no answer is this call's failed round trip, and the script
	// is not sent, so against a server that refuses or never answers the
	// call still returns within one operation timeout.
	sctx, send := ctx, true
	var err error
	if !b.rightsOK.Load() {
		var cancel context.CancelFunc
		sctx, cancel = withDeadline(ctx, sent.Add(b.cfg.fault.opTimeout))
		defer cancel()
		err = s.checkRights(sctx)
		var re redis.Error
		switch {
		case errors.Is(err, errNoRights):
			b.brk.record(outcomeOK, time.Now())
			return reply{}, err
		case errors.As(err, &re):
			err = nil // a Redis reply (NOPERM, MOVED...) is the script's to meet
		}
		send = err == nil
		if send {
			// The server answers: the script gets its own round trips, and
			// a slot in migration its retries, within ctx (callRetry).
			sctx = ctx
		}
	}
	var v []any
	if send {
		// One slice holds the whole command, its constant part boxed once
		// per semaphore (evalArgs): the uncontended path allocates little.
		cmd := make([]any, 0, 2+len(s.args.keys)+2+len(args))
		cmd = append(cmd, "evalsha", boxedSHA(sc))
		cmd = append(cmd, s.args.keys...)
		cmd = append(cmd, limit, s.args.notify)
		cmd = append(cmd, args...)
		v, err = b.callRetry(sctx, sc, cmd)
	}
	recv := time.Now()
	o := outcomeOK
	if err != nil {
		// ctx, not a round trip's: the operation timeout ending a round
		// trip is Redis's failure, ctx's deadline ending it the caller's.
		o = classify(ctx, err, recv.Sub(sent), b.cfg.fault.opTimeout)
	}
	b.brk.record(o, recv)
	if o == outcomeFailed {
		b.poke()        // the loop times the outage grace
		b.reloadSlots() // a dead Cluster master: find its successor
	}
	if err != nil {
		if gated && send && !neverSent(err) {
			b.resyncSem(s)
		}
		return reply{}, b.dials.explain(ctx, sent, err) // a refused dial, not "deadline exceeded"
	}
	r, err := parseReply(v)
	s.clock.learn(sent, recv, r.nowUS)
	b.deliver(r.notes)
	if r.limit > 0 {
		s.seen.Store(r.limit)
	}
	if r.again {
		b.resyncSem(s)
	}
	if r.deaf {
		b.resubscribe(nil)
	}
	return r, err
}

// Bounds of callRetry: a slot in migration is retried for at most
// migrateBudget, a cluster that is down for at most downBudget, each within
// the caller's ctx.
const (
	migrateBudget = 10 * time.Second
	downBudget    = 2 * time.Second
)

// callRetry runs cmd, the EVALSHA command of sc (evalSHA), each round trip
// bounded by ctx and the operation timeout, and retries the Cluster replies
// that a retry resolves (TRYAGAIN, MOVED and ASK during a slot migration,
// CLUSTERDOWN briefly) with a backoff from 10 ms to 200 ms, while ctx
// lasts: every script is idempotent per id, so a retry is safe, and
// callers do not see migration errors.
func (b *redisBackend) callRetry(ctx context.Context, sc *redis.Script, cmd []any) ([]any, error) {
	start := time.Now()
	backoff := 10 * time.Millisecond
	for {
		octx, cancel := withDeadline(ctx, time.Now().Add(b.cfg.fault.opTimeout))
		v, err := b.callScript(ctx, octx, sc, cmd)
		cancel()
		if err == nil {
			return v, nil
		}
		kind := clusterReplyOf(err)
		budget := migrateBudget
		if kind == replyDown {
			budget = downBudget
		}
		if kind == replyOther || time.Since(start)+backoff > budget || endsWithin(ctx, backoff) {
			return v, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// endsWithin reports whether ctx's deadline comes within d.
func endsWithin(ctx context.Context, d time.Duration) bool {
	end, ok := ctx.Deadline()
	return ok && time.Until(end) <= d
}

// withDeadline is context.WithDeadline, without its allocations when ctx
// already ends by d: then it returns ctx itself.
func withDeadline(ctx context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if end, ok := ctx.Deadline(); ok && !end.After(d) {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, d)
}

// bound is context.WithTimeout(ctx, d) for a call that this package bounds
// itself (a Release, a background leave). If nothing but that deadline can
// end the result (ctx cannot be cancelled), it says so to callScript: a
// client that honours ctx deadlines then needs no goroutine per round trip.
func bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	bctx, cancel := context.WithTimeout(ctx, d)
	if ctx.Done() == nil {
		return deadlineOnly{bctx}, cancel
	}
	return bctx, cancel
}

// deadlineOnly is a ctx that only its deadline ends (see bound).
type deadlineOnly struct{ context.Context }

// cancellable reports whether ctx may end other than by its deadline.
func cancellable(ctx context.Context) bool {
	if _, ok := ctx.(deadlineOnly); ok {
		return false
	}
	return ctx.Done() != nil
}

// callScript runs cmd, the EVALSHA command of sc (evalSHA), within ctx,
// which is parent bounded by the operation timeout. go-redis turns a ctx
// deadline into a socket deadline only with ContextTimeoutEnabled, and a
// cancellation never interrupts a read, so unless the client honours
// deadlines and only its deadline can end parent, the round trip runs in a
// goroutine that the caller stops waiting for when ctx ends. That goroutine
// is the backend's: Close waits for it, and it ends by the client's own
// timeouts (see Semaphore.Close).
func (b *redisBackend) callScript(parent, ctx context.Context, sc *redis.Script, cmd []any) ([]any, error) {
	if b.ctxHonoured && !cancellable(parent) {
		return evalSHA(ctx, b.client, sc, cmd).Slice()
	}
	done := donePool.Get().(chan *redis.Cmd)
	b.startScript(ctx, sc, cmd, done)
	select {
	case c := <-done:
		donePool.Put(done) // empty again: reusable
		return c.Slice()
	case <-ctx.Done():
		return nil, ctx.Err() // done is the goroutine's until it sends
	}
}

// startScript runs cmd (evalSHA) within ctx in a goroutine that Close
// waits for (trips), which sends the finished command on done: done must
// have room for it.
func (b *redisBackend) startScript(ctx context.Context, sc *redis.Script, cmd []any, done chan<- *redis.Cmd) {
	b.trips.add()
	go func() {
		defer b.trips.done()
		done <- evalSHA(ctx, b.client, sc, cmd)
	}()
}

// donePool recycles the channels of callScript's goroutines.
var donePool = sync.Pool{New: func() any { return make(chan *redis.Cmd, 1) }}

// evalSHA is the one way this package runs a script: it sends cmd, the
// EVALSHA command of sc ("evalsha", sha, numkeys, keys..., args...; see
// scriptCmd), as Script.Run would (cmdable.eval's command, with the key
// position set for Cluster), and falls back to EVAL on NOSCRIPT. It is
// Script.Run by hand so that a semaphore's script calls box their constant
// part once (evalArgs) rather than per call: measured on the uncontended
// acquire/release pair and the zero-hold burst, Script.Run cost 5 to 7%
// of their rate.
func evalSHA(ctx context.Context, client redis.UniversalClient, sc *redis.Script, cmd []any) *redis.Cmd {
	c := redis.NewCmd(ctx, cmd...)
	n, _ := cmd[2].(int)
	if n > 0 {
		c.SetFirstKeyPos(3)
	}
	_ = client.Process(ctx, c)
	if err := c.Err(); err == nil || !errors.Is(err, redis.ErrNoScript) && !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return c
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i], _ = cmd[3+i].(string)
	}
	return sc.Eval(ctx, client, keys, cmd[3+n:]...)
}

// scriptCmd is the EVALSHA command of sc with keys and argv, for evalSHA.
func scriptCmd(sc *redis.Script, keys []string, argv ...any) []any {
	cmd := make([]any, 0, 3+len(keys)+len(argv))
	cmd = append(cmd, "evalsha", boxedSHA(sc), len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	return append(cmd, argv...)
}

// scriptPing declares a key and does nothing: a node that is not the master
// of the key's slot refuses it (MOVED), see isMaster.
var scriptPing = redis.NewScript("return 1")

// shas holds each script's SHA-1 as an interface value, boxed once.
var shas = func() map[*redis.Script]any {
	m := make(map[*redis.Script]any)
	for _, sc := range []*redis.Script{scriptRights, scriptAcquire, scriptRelease,
		scriptHeartbeat, scriptSetLimit, scriptStats, scriptAdopt, scriptSetLease,
		scriptShare, scriptQuorumFloor, scriptPing} {
		m[sc] = sc.Hash()
	}
	return m
}()

func boxedSHA(sc *redis.Script) any {
	if h, ok := shas[sc]; ok {
		return h
	}
	return sc.Hash()
}

// evalArgs is the constant part of a semaphore's script calls, boxed once:
// numkeys and the keys, and the channel of this process's grants.
type evalArgs struct {
	keys   []any // numkeys, keys...
	notify any
}

func newEvalArgs(keys []string, notify string) evalArgs {
	a := evalArgs{keys: make([]any, 0, 1+len(keys)), notify: notify}
	a.keys = append(a.keys, len(keys))
	for _, k := range keys {
		a.keys = append(a.keys, k)
	}
	return a
}

// inflight counts goroutines, for a wait that may start while more are
// added (sync.WaitGroup forbids an Add from zero concurrent with Wait).
type inflight struct {
	n    atomic.Int64
	mu   sync.Mutex
	zero chan struct{} // closed when n reaches 0; nil while nobody waits
}

func (f *inflight) add() { f.n.Add(1) }

func (f *inflight) done() {
	if f.n.Add(-1) != 0 {
		return
	}
	f.mu.Lock()
	if f.zero != nil && f.n.Load() == 0 {
		close(f.zero)
		f.zero = nil
	}
	f.mu.Unlock()
}

// wait returns once no goroutine is counted.
func (f *inflight) wait() {
	f.mu.Lock()
	if f.n.Load() == 0 {
		f.mu.Unlock()
		return
	}
	if f.zero == nil {
		f.zero = make(chan struct{})
	}
	z := f.zero
	f.mu.Unlock()
	<-z
}

// ctxHonoured reports whether client bounds its network reads and writes
// by the ctx of each call.
func ctxHonoured(client redis.UniversalClient) bool {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// serverClock estimates the offset of Redis TIME from the local clock,
// from the round trips of one semaphore (one node, also on Cluster).
type serverClock struct {
	mu     sync.Mutex
	known  bool
	offset time.Duration // server - local
	err    time.Duration // half the round trip of the estimate
}

func (c *serverClock) learn(sent, recv time.Time, nowUS int64) {
	if nowUS == 0 {
		return
	}
	rtt := recv.Sub(sent)
	mid := sent.Add(rtt / 2)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.known = true
	c.offset = time.UnixMicro(nowUS).Sub(mid)
	c.err = rtt / 2
}

// local converts a Redis TIME (µs) to the local clock, if an estimate of
// the offset exists.
func (c *serverClock) local(us int64) (time.Time, bool) {
	if us == 0 {
		return time.Time{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known {
		return time.Time{}, false
	}
	return time.UnixMicro(us).Add(-c.offset), true
}

// deadlineMargin is added to a request's deadline in server time, beyond
// the estimate's own error: a request refused by it is a spurious failure.
const deadlineMargin = 100 * time.Millisecond

// serverDeadline is the Redis TIME (µs) after which an acquire sent now
// must be refused: the end of this round trip's operation timeout (or of
// ctx, if sooner), plus margins. 0 means no deadline (no estimate yet).
func (s *Semaphore) serverDeadline(ctx context.Context, wider bool) int64 {
	s.clock.mu.Lock()
	known, offset, e := s.clock.known, s.clock.offset, s.clock.err
	s.clock.mu.Unlock()
	if !known {
		return 0
	}
	end := time.Now().Add(s.b.cfg.fault.opTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(end) {
		end = d
	}
	margin := deadlineMargin + e
	if wider {
		margin *= 4
	}
	return end.Add(offset + margin).UnixMicro()
}

// tombTTL is how long (ms) the release script keeps a tombstone for an id
// of lease ttl: long enough to refuse a late copy of its acquire (which
// also carries its own deadline) and to answer a retried release, and no
// longer than the lease, which bounds the memory of a busy semaphore.
func (b *redisBackend) tombTTL(ttl time.Duration) int64 {
	return min(ttl, 2*b.cfg.fault.opTimeout+2*time.Second).Milliseconds()
}

// Arguments of the default lease TTL, boxed once (newRedisBackend): most
// calls use them, and boxing an int64 above 255 allocates.
type ttlArgs struct {
	lease    time.Duration
	ms, tomb any // lease.Milliseconds(), tombTTL(lease)
}

// leaseArg is ttl in ms as a script argument.
func (b *redisBackend) leaseArg(ttl time.Duration) any {
	if ttl == b.ttlArgs.lease {
		return b.ttlArgs.ms
	}
	return ttl.Milliseconds()
}

// tombArg is tombTTL(ttl) as a script argument.
func (b *redisBackend) tombArg(ttl time.Duration) any {
	if ttl == b.ttlArgs.lease {
		return b.ttlArgs.tomb
	}
	return b.tombTTL(ttl)
}
