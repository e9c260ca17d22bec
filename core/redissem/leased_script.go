package redissem

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/distsem/distsem/core"

	"github.com/redis/go-redis/v9"
)

// The leased mode's scripts, after the constants that every script shares
// (lua/const.lua), the fleet's queue (lua/share_queue.lua) and the format
// of an entry (lua/share_entry.lua): share.lua takes every decision about
// shares; share_give.lua (a give-back) and share_take.lua (a take of free
// capacity, or a place in the fleet's queue) each take one, reading only
// the entries they need, and leave to share.lua what they cannot decide
// so.
var (
	//go:embed lua/share.lua
	luaShare string
	//go:embed lua/share_give.lua
	luaShareGive string
	//go:embed lua/share_take.lua
	luaShareTake string
	//go:embed lua/share_queue.lua
	luaShareQueue string
	//go:embed lua/share_entry.lua
	luaShareEntry   string
	shareLib        = luaConst + luaShareQueue + luaShareEntry
	scriptShare     = newScript(shareLib + luaShare)
	scriptShareGive = newScript(shareLib + luaShareGive)
	scriptShareTake = newScript(shareLib + luaShareTake)
)

// Codes of share.lua's reply besides 1 (ok): shareNew for a process that
// had no entry (new, expired or lost) and was given one anew, with a new
// epoch; shareLeft (share_give.lua) for an idle process whose give-back
// deleted its entry.
const (
	shareNew  = 2
	shareLeft = 3
)

// shareReply is the reply of share.lua.
type shareReply struct {
	code, share, limit, target, epoch, nowUS, inUse, waiting int64
	myInUse, myWaiting, ver                                  int64
	free                                                     int64 // no share holds it (< 0: unknown)
	hot, contended                                           bool
	soon                                                     time.Duration // starved: until another holder's lease ends
}

// run runs share.lua once, bounded by ctx and the operation timeout, and
// records the outcome in the breaker (it is never refused by it: a beat is
// a probe, like a renewal).
func (l *leased) run(ctx context.Context, op string, newLimit int64) (shareReply, error) {
	return l.runWithin(ctx, l.s.b.cfg.fault.opTimeout, op, shareArgs{newLimit: newLimit})
}

// shareArgs is what a beat reports (zero for the other ops); known is the
// version of the share that the process has applied.
type shareArgs struct {
	demand, keep, inUse, waiting, need, newLimit, known int64
	leave                                               bool // a give-back: leave if idle
	single                                              bool // a take: single-use (leased_single.go)
}

// runWithin is run bounded by d (and the operation timeout) rather than by
// ctx alone: a beat that takes longer than d is a backend failure.
func (l *leased) runWithin(ctx context.Context, d time.Duration, op string, a shareArgs) (shareReply, error) {
	b := l.s.b
	v, err := l.call(ctx, d, scriptShare, l.s.limit, l.pid, op, a.demand, a.keep, a.inUse,
		b.cfg.leaseTTL.Milliseconds(), a.newLimit, shareRotation.Milliseconds(), a.waiting, a.need, b.cfg.owner,
		l.s.notify, a.known)
	if err != nil {
		return shareReply{}, err
	}
	return l.parseShareReply(v)
}

// runLean runs sc, share_give.lua or share_take.lua, once, bounded by ctx,
// d and the operation timeout: a give-back of the share above a.keep, or a
// take of what the head waiter lacks, by the entry of epoch (0: none yet,
// a take registers it, and creates the hash with the configured limit if
// there is none). A reply of code 0 means that it changed nothing
// and share.lua must decide.
func (l *leased) runLean(ctx context.Context, d time.Duration, sc *redis.Script, a shareArgs, epoch int64) (shareReply, error) {
	v, err := l.call(ctx, d, sc, l.leanArgs(a, epoch)...)
	if err != nil {
		return shareReply{}, err
	}
	if len(v) == 1 {
		return shareReply{}, nil // code 0: share.lua decides
	}
	return l.parseShareReply(v)
}

// leanArgs is the ARGV of share_give.lua and share_take.lua for a and
// epoch. ARGV[12] is a give-back's leave, or a take's single use.
func (l *leased) leanArgs(a shareArgs, epoch int64) []any {
	b := l.s.b
	return []any{l.pid, a.demand, a.keep, a.inUse, a.waiting, a.need,
		b.cfg.leaseTTL.Milliseconds(), a.known, epoch, b.cfg.owner, l.s.notify, a.leave || a.single, l.s.limit}
}

// call runs sc on the shares hash with argv, bounded by ctx, d and the
// operation timeout, and records the outcome in the breaker (it is never
// refused by it: a beat is a probe, like a renewal).
func (l *leased) call(ctx context.Context, d time.Duration, sc *redis.Script, argv ...any) ([]any, error) {
	b := l.s.b
	sent := time.Now()
	octx, cancel := context.WithTimeout(ctx, min(d, b.cfg.fault.opTimeout))
	var v []any
	var err error
	if sc == scriptShareTake && b.givesQueued() {
		v, err = b.takeWithGives(ctx, octx, scriptCmd(sc, l.keys, argv...))
	} else {
		v, err = b.callScript(ctx, octx, sc, scriptCmd(sc, l.keys, argv...))
	}
	cancel()
	recv := time.Now()
	b.brk.record(classify(ctx, err, recv.Sub(sent), b.cfg.fault.opTimeout), recv)
	if err != nil {
		return nil, b.dials.explain(ctx, sent, err)
	}
	return v, nil
}

// parseShareReply reads the reply of share.lua (or share_give.lua).
func (l *leased) parseShareReply(v []any) (shareReply, error) {
	if len(v) != 15 {
		return shareReply{}, fmt.Errorf("redissem: unexpected share reply of %d elements", len(v))
	}
	var n [15]int64
	for i := range v {
		n[i], _ = v[i].(int64)
	}
	r := shareReply{code: n[0], share: n[1], limit: n[2], target: n[3], epoch: n[4], hot: n[5] == 1,
		nowUS: n[6], inUse: n[7], waiting: n[8], myInUse: n[9], myWaiting: n[10], ver: n[11], contended: n[12] == 1,
		soon: time.Duration(n[13]) * time.Millisecond, free: n[14]}
	if r.limit > 0 {
		l.s.seen.Store(r.limit)
	}
	return r, nil
}

// stats reads the fleet's totals: this process's as they are now, the
// others' as of their last heartbeat.
func (l *leased) stats(ctx context.Context) (core.Stats, error) {
	r, err := l.run(ctx, "stats", 0)
	if err != nil {
		return core.Stats{}, unavailable("stats", l.s.name, err)
	}
	inUse, waiting := l.localTotals()
	return core.Stats{Limit: r.limit, InUse: r.inUse - r.myInUse + inUse, Waiting: r.waiting - r.myWaiting + waiting}, nil
}

// localTotals returns the permits in use in this process (but those lost,
// no longer counted, as in the default mode) and the callers queued here.
func (l *leased) localTotals() (inUse, waiting int64) {
	ls := l.loc.State()
	inUse, waiting = ls.InUse, ls.WaitN
	l.mu.Lock()
	for p, lost := range l.held {
		if lost {
			inUse -= p.weight
		}
	}
	l.mu.Unlock()
	return inUse, waiting
}

// setLimit stores limit in Redis for every process and applies it here.
func (l *leased) setLimit(ctx context.Context, limit int64) error {
	r, err := l.run(ctx, "setlimit", limit)
	if err != nil {
		err = unavailable("set limit", l.s.name, err)
		l.s.b.report(l.s.label, err)
		return err
	}
	l.mu.Lock()
	l.limit = r.limit
	l.applyLocked()
	l.mu.Unlock()
	l.poke()
	return nil
}
