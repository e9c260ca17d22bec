package redissem

import (
	"context"
	"errors"
	"sync"
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

func (s *Semaphore) runScript(ctx context.Context, sc *redis.Script, gated bool, limit int64, args ...any) (reply, error) {
	return s.runScriptUntil(ctx, time.Time{}, sc, gated, limit, args...)
}

// runScriptUntil is runScript bounded also by end (if not zero), as if ctx
// had that deadline too, without the allocations of a context per call
// (see releaseID).
func (s *Semaphore) runScriptUntil(ctx context.Context, end time.Time, sc *redis.Script, gated bool, limit int64, args ...any) (reply, error) {
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
		sctx, cancel = context.WithDeadline(ctx, capEnd(sent.Add(b.cfg.fault.opTimeout), end))
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
		v, err = b.callRetry(sctx, end, sc, cmd)
	}
	recv := time.Now()
	o := outcomeOK
	if err != nil {
		o = classify(ctx, err, recv.Sub(sent), b.cfg.fault.opTimeout)
		// As classify would say of a ctx that ended at end.
		if o == outcomeFailed && ctx.Err() == nil && past(end, recv) && recv.Sub(sent) < b.cfg.fault.opTimeout/4 {
			o = outcomeNeutral
		}
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
		if past(end, recv) {
			return reply{}, err // as explain says of a ctx that ended
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

// callRetry runs the script, each round trip bounded by the operation
// timeout, and retries the Cluster replies that a retry resolves (TRYAGAIN,
// MOVED and ASK during a slot migration, CLUSTERDOWN briefly) with a
// backoff from 10 ms to 200 ms: every script is idempotent per id, so a
// retry is safe, and callers do not see migration errors. cmd is the whole
// EVALSHA command (callCmd). A non-zero end bounds it as a deadline of ctx
// would.
func (b *redisBackend) callRetry(ctx context.Context, end time.Time, sc *redis.Script, cmd []any) ([]any, error) {
	start := time.Now()
	backoff := 10 * time.Millisecond
	for {
		octx, cancel := withDeadline(ctx, capEnd(time.Now().Add(b.cfg.fault.opTimeout), end))
		v, err := b.callCmd(ctx, octx, sc, cmd)
		cancel()
		if err == nil {
			return v, nil
		}
		kind := clusterReplyOf(err)
		budget := migrateBudget
		if kind == replyDown {
			budget = downBudget
		}
		if kind == replyOther || time.Since(start)+backoff > budget || past(end, time.Now().Add(backoff)) {
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

// withDeadline is context.WithDeadline, without its allocations when ctx
// already ends by d: then it returns ctx itself.
func withDeadline(ctx context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if end, ok := ctx.Deadline(); ok && !end.After(d) {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, d)
}

// capEnd is the earlier of d and end; a zero end is no bound.
func capEnd(d, end time.Time) time.Time {
	if !end.IsZero() && end.Before(d) {
		return end
	}
	return d
}

// past reports whether t is at or after end (never for a zero end).
func past(end, t time.Time) bool {
	return !end.IsZero() && !t.Before(end)
}

// call runs the script with keys and argv within ctx, which is parent
// bounded by the operation timeout (see callCmd).
func (b *redisBackend) call(parent, ctx context.Context, sc *redis.Script, keys []string, argv []any) ([]any, error) {
	cmd := make([]any, 0, 3+len(keys)+len(argv))
	cmd = append(cmd, "evalsha", boxedSHA(sc), len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	return b.callCmd(parent, ctx, sc, append(cmd, argv...))
}

// callCmd runs cmd, an EVALSHA of sc ("evalsha", sha, numkeys, keys...,
// args...), within ctx, which is parent bounded by the operation timeout;
// a server without the script gets it by EVAL, as Script.Run does. go-redis
// turns a ctx deadline into a socket deadline only with
// ContextTimeoutEnabled, and a cancellation never interrupts a read, so
// unless the client honours deadlines and parent cannot be cancelled, the
// call runs in a goroutine that the caller stops waiting for when ctx ends;
// that goroutine ends by the client's own timeouts.
func (b *redisBackend) callCmd(parent, ctx context.Context, sc *redis.Script, cmd []any) ([]any, error) {
	if b.ctxHonoured && parent.Done() == nil {
		return b.evalSHA(ctx, sc, cmd)
	}
	done := donePool.Get().(chan callResult)
	go func() {
		v, err := b.evalSHA(ctx, sc, cmd)
		done <- callResult{v, err}
	}()
	select {
	case r := <-done:
		donePool.Put(done) // empty again: reusable
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err() // done is the goroutine's until it sends
	}
}

type callResult struct {
	v   []any
	err error
}

// donePool recycles the channels of callCmd's goroutines.
var donePool = sync.Pool{New: func() any { return make(chan callResult, 1) }}

// evalSHA runs cmd as Script.Run would (cmdable.eval's command, with the
// key position set for Cluster), and falls back to EVAL on NOSCRIPT.
func (b *redisBackend) evalSHA(ctx context.Context, sc *redis.Script, cmd []any) ([]any, error) {
	c := redis.NewCmd(ctx, cmd...)
	n, _ := cmd[2].(int)
	if n > 0 {
		c.SetFirstKeyPos(3)
	}
	_ = b.client.Process(ctx, c)
	v, err := c.Slice()
	if err == nil || !errors.Is(err, redis.ErrNoScript) && !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return v, err
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i], _ = cmd[3+i].(string)
	}
	return sc.Eval(ctx, b.client, keys, cmd[3+n:]...).Slice()
}

// shas holds each script's SHA-1 as an interface value, boxed once.
var shas = func() map[*redis.Script]any {
	m := make(map[*redis.Script]any)
	for _, sc := range []*redis.Script{scriptRights, scriptAcquire, scriptRelease,
		scriptHeartbeat, scriptSetLimit, scriptStats} {
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
