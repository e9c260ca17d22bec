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
	// WithReplicaAck: the script ran, unacknowledged (a type assertion:
	// errors.As would make short escape, an allocation per call).
	short, _ := err.(*ackShortfall)
	if short != nil {
		v, err = short.reply, nil
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
	b.migration.settled()
	r, err := parseReply(v)
	s.clock.learn(sent, recv, r.nowUS)
	// WAIT covered what this connection wrote; a re-run, or a heartbeat
	// that only reports grants that other scripts made, may have written
	// nothing (WithReplicaAck).
	if short == nil && b.cfg.ack.n > 0 && ackedScripts[sc] && (r.again || sc == scriptHeartbeat && len(r.notes) > 0) {
		if short = s.reack(ctx); short != nil {
			short.reply = v
		}
	}
	if short == nil {
		b.deliver(r.notes)
		if len(r.held) > 0 {
			s.publishHeld(ctx, r.held)
		}
	} else {
		// Not announced until the replicas have them (redis_ack.go).
		s.announceLater(r.notes, r.held)
		r.notes, r.held = nil, nil
	}
	if r.limit > 0 {
		s.seen.Store(r.limit)
	}
	if r.again {
		b.resyncSem(s)
	}
	if r.deaf {
		b.resubscribe(nil)
	}
	if r.lone {
		s.ownerEnd.Store(0) // the next acquire stores the owner record again
	}
	if err == nil && short != nil {
		err = s.unacked(sc, short)
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
	var moving error // the latest migration reply
	for {
		octx, cancel := withDeadline(ctx, time.Now().Add(b.cfg.fault.opTimeout))
		v, err := b.callScript(ctx, octx, sc, cmd)
		cancel()
		if err == nil {
			return v, nil
		}
		if moving != nil && ctx.Err() != nil {
			// ctx ended a retry: the migration is what failed the call.
			return v, moving
		}
		kind := clusterReplyOf(err)
		if kind == replyMigrating || kind == replyMoved {
			moving = err
		}
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
		return b.eval(ctx, sc, cmd).Slice()
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
		done <- b.eval(ctx, sc, cmd)
	}()
}

// donePool recycles the channels of callScript's goroutines.
var donePool = sync.Pool{New: func() any { return make(chan *redis.Cmd, 1) }}

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
