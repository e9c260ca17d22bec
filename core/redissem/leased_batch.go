package redissem

import (
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Idle give-backs ride along. A release that leaves its share unused
// while nobody is starved (giveIdle, see leased_idle.go) does not wait for
// the give-back: it queues it here, and the next take of any leased
// semaphore of this client (share_take.lua, in an Acquire) sends it in the
// same pipeline, one round trip for both. If no take comes within
// giveDelay, a goroutine sends the give-backs queued by then, together.
// Nobody waits for such a unit, so a little delay costs nothing; a process
// that comes to want it queues in Redis, and a push tells the holder to
// give it back at once (pushed).

// giveDelay bounds how long a queued give-back waits for a take to carry
// it.
const giveDelay = 200 * time.Microsecond

// giveBatch is a client's queue of idle give-backs.
type giveBatch struct {
	mu      sync.Mutex
	pending []*leased
	armed   bool          // a goroutine will send the pending ones (sendLater)
	delay   time.Duration // giveDelay if 0; longer in tests
}

// deferGive queues l's give-back; l.giveReq is set, so nothing is granted
// from the share meanwhile. It reports false if the client is closed.
func (b *redisBackend) deferGive(l *leased) bool {
	g := &b.gives
	g.mu.Lock()
	g.pending = append(g.pending, l)
	arm := !g.armed
	g.armed = true
	g.mu.Unlock()
	if arm && !b.goBackground(b.sendLater) {
		g.mu.Lock()
		g.armed = false
		g.mu.Unlock()
		return false
	}
	return true
}

// sendLater sends, giveDelay from now, the give-backs still queued then.
func (b *redisBackend) sendLater() {
	g := &b.gives
	g.mu.Lock()
	d := cmp.Or(g.delay, giveDelay)
	g.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-b.stop:
	}
	g.mu.Lock()
	g.armed = false
	g.mu.Unlock()
	gs := b.claimGives()
	if len(gs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(b.cfg.leaseTTL/3, b.cfg.fault.opTimeout))
	defer cancel()
	cmds := make([]*redis.Cmd, len(gs))
	_ = b.pipeline(ctx, gs, cmds, nil)
	b.endGives(ctx, gs, cmds)
}

// pendingGive is a queued give-back whose beat has started: its leased
// holds the slot until endGives.
type pendingGive struct {
	l *leased
	p beatPlan
}

// claimGives takes the queued give-backs and starts their beats. One whose
// slot is held is left to that slot's holder, which finds the give-back
// asked for when it ends and pokes the loop (unclaim).
func (b *redisBackend) claimGives() []pendingGive {
	g := &b.gives
	g.mu.Lock()
	ls := g.pending
	g.pending = nil
	g.mu.Unlock()
	var out []pendingGive
	for _, l := range ls {
		select {
		case l.slot <- struct{}{}:
		default:
			continue
		}
		l.mu.Lock()
		run := l.running && !l.closed && l.giveReq
		l.mu.Unlock()
		if !run {
			l.unclaim()
			continue
		}
		p := l.plan()
		if p.lean != scriptShareGive {
			// share.lua is to decide: the loop runs it.
			next, urgent := l.finish(context.Background(), p, true, shareReply{}, nil)
			l.leanDone(next, urgent)
			l.unclaim()
			continue
		}
		out = append(out, pendingGive{l: l, p: p})
	}
	return out
}

// pipeline sends the give-backs gs (their commands into cmds) and, if
// take is not nil, that command last, in one pipeline bounded by ctx, and
// returns the take's command. A script that Redis does not have is sent
// again alone, by EVAL, which loads it.
func (b *redisBackend) pipeline(ctx context.Context, gs []pendingGive, cmds []*redis.Cmd, take *redis.Cmd) *redis.Cmd {
	pipe := b.client.Pipeline()
	for i, pg := range gs {
		cmds[i] = redis.NewCmd(ctx, pg.l.giveCmd(pg.p)...)
		cmds[i].SetFirstKeyPos(3)
		_ = pipe.Process(ctx, cmds[i])
	}
	if take != nil {
		_ = pipe.Process(ctx, take)
	}
	_, _ = pipe.Exec(ctx)
	again := func(c *redis.Cmd, sc *redis.Script) *redis.Cmd {
		if noScript(c.Err()) {
			return evalLoading(ctx, b.client, sc, c.Args())
		}
		return c
	}
	for i := range cmds {
		cmds[i] = again(cmds[i], scriptShareGive)
	}
	if take != nil {
		take = again(take, scriptShareTake)
	}
	return take
}

// endGives finishes the beats of the give-backs gs with their replies.
func (b *redisBackend) endGives(ctx context.Context, gs []pendingGive, cmds []*redis.Cmd) {
	for i, pg := range gs {
		l := pg.l
		v, err := cmds[i].Slice()
		var r shareReply
		if err == nil && len(v) != 1 {
			r, err = l.parseShareReply(v)
		}
		next, urgent := l.finish(ctx, pg.p, true, r, err)
		l.leanDone(next, urgent)
		l.unclaim()
		l.stopLeft()
	}
}

// giveCmd is the EVALSHA command of the give-back that p plans.
func (l *leased) giveCmd(p beatPlan) []any {
	return scriptCmd(scriptShareGive, l.keys, l.leanArgs(p.a, p.epoch)...)
}

// givesQueued reports whether give-backs are queued.
func (b *redisBackend) givesQueued() bool {
	g := &b.gives
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending) > 0
}

// takeWithGives runs the take cmd with the queued give-backs in one
// pipeline, in a goroutine that Close waits for (as callScript), bounded
// by ctx; the give-backs are bounded by the operation timeout alone, and
// the goroutine finishes them even if the caller stopped waiting.
func (b *redisBackend) takeWithGives(parent, ctx context.Context, cmd []any) ([]any, error) {
	gs := b.claimGives()
	if len(gs) == 0 {
		return b.callScript(parent, ctx, scriptShareTake, cmd)
	}
	done := make(chan *redis.Cmd, 1)
	b.trips.add()
	go func() {
		defer b.trips.done()
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(b.cfg.leaseTTL/3, b.cfg.fault.opTimeout))
		defer cancel()
		take := redis.NewCmd(ctx, cmd...)
		take.SetFirstKeyPos(3)
		cmds := make([]*redis.Cmd, len(gs))
		done <- b.pipeline(gctx, gs, cmds, take)
		b.endGives(gctx, gs, cmds)
	}()
	select {
	case c := <-done:
		return c.Slice()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// unqueueGive cancels l's queued give-back, if any, and reports whether it
// did: a caller wants the share again, which serves it here.
func (l *leased) unqueueGive() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.giveQueued {
		return false
	}
	l.giveQueued, l.giveReq = false, false
	if l.single {
		l.unsingleLocked() // used again here
	}
	if !l.gaveAt.IsZero() {
		// Used again soon after a release gave the share back: keep it
		// idle next time, as begin does.
		l.giveIdle = l.givesBackNextLocked()
		l.gaveAt = time.Time{}
	}
	l.applyLocked()
	return true
}
