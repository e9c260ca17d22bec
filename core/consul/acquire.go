package consul

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

func (s *Semaphore) acquire(ctx context.Context, try bool, opts []core.AcquireOption) (*core.Permit, error) {
	a, err := backend.ResolveAcquire(s.cfg.LeaseTTL, opts...)
	if err == nil {
		err = a.RefuseFlow("a Consul semaphore")
	}
	if err != nil {
		return nil, err
	}
	if a.LeaseTTLGiven {
		return nil, fmt.Errorf("%w: WithLeaseTTL on %q: every permit of a Consul semaphore has its session's TTL", core.ErrInvalidArgument, s.name)
	}
	if ctx.Err() != nil {
		return nil, backend.WaitError(ctx, s.name)
	}
	var p *core.Permit
	if sn := s.last.Load(); try || sn == nil || len(sn.queue) == 0 && sn.used+a.Weight <= sn.st.Limit {
		p, err = s.tryGrant(ctx, a.Weight, a.Note, try)
	} // else the last snapshot says queue: do so without reading first
	switch {
	case err == nil && p != nil:
		s.observe(core.Event{Kind: core.EventAcquired, Name: s.name, Weight: a.Weight, Ctx: ctx})
		return p, nil
	case err == nil && try:
		return nil, fmt.Errorf("%w: %q", core.ErrNoPermit, s.name)
	case err == nil:
		p, err = s.wait(ctx, a.Weight, a.Note)
	}
	if errors.Is(err, core.ErrUnavailable) {
		return s.failed(ctx, s.report(err), try, opts, a.Weight)
	}
	return p, err
}

// errorOf turns an error of a Consul call made under ctx into the
// package's contract: the ctx's end, ErrClosed, or ErrUnavailable.
func (s *Semaphore) errorOf(ctx, caller context.Context, op string, err error) error {
	switch {
	case errors.Is(context.Cause(ctx), core.ErrClosed):
		return core.ErrClosed
	case caller.Err() != nil:
		return backend.WaitError(caller, s.name)
	case errors.Is(err, core.ErrClosed), errors.Is(err, core.ErrInvalidArgument):
		return err
	}
	return unavailable(op, s.name, err)
}

// tryGrant grants w permits if they fit and nobody is queued, creating the
// holder's key under our session in the same transaction as the .lock
// update. It returns a nil permit and nil error if there is no room, or
// for an Acquire (not try) once its check-and-set failed: contenders that
// arrive together on a free semaphore then queue, where the order is
// decided without conflicts, instead of racing on .lock until it is full
// (measured: 35 at once made about 180 failed transactions).
func (s *Semaphore) tryGrant(ctx context.Context, w int64, note string, try bool) (*core.Permit, error) {
	for {
		sn, err := s.read(ctx, 0)
		if err != nil {
			return nil, s.errorOf(ctx, ctx, "acquire", err)
		}
		if w > sn.st.Limit {
			return nil, tooHeavy(w, sn.st.Limit, s.name)
		}
		if len(sn.queue) > 0 || sn.used+w > sn.st.Limit {
			return nil, nil
		}
		sid, err := s.sess.get(ctx)
		if err != nil {
			return nil, s.errorOf(ctx, ctx, "create session", err)
		}
		id := s.newID()
		key := s.prefix + id
		now := time.Now()
		st := sn.st
		st.Holders = append(slices.Clip(st.Holders), holderEntry{ID: id, W: w})
		ok, resp, err := s.commit(ctx, sn.lockOp(s.lockKey, st, true),
			&api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVLock, Key: key, Session: sid,
				Value: mustJSON(contender{W: w, At: now.UnixMicro(), Owner: s.cfg.Owner, Note: note})}})
		switch {
		case errors.Is(err, errSession):
			s.sess.invalidate(sid)
			continue
		case err != nil:
			s.leave(ctx, id)
			return nil, s.errorOf(ctx, ctx, "acquire", err)
		case ok:
			s.last.Store(sn.afterGrant(s.lockKey, st, key, sid, resp))
			return s.granted(ctx, id, w, sid, indexOf(resp, key), now), nil
		case !try:
			return nil, nil
		}
	}
}

func tooHeavy(w, limit int64, name string) error {
	return fmt.Errorf("%w: weight %d exceeds the limit %d of %q", core.ErrInvalidArgument, w, limit, name)
}

// indexOf returns the ModifyIndex that the transaction gave key.
func indexOf(resp *api.TxnResponse, key string) uint64 {
	for _, r := range resp.Results {
		if r != nil && r.KV != nil && r.KV.Key == key {
			return r.KV.ModifyIndex
		}
	}
	return 0
}

// wait queues a contender key and waits for its grant. A waiter whose key
// vanished (its session was lost while it waited) queues again at the back.
func (s *Semaphore) wait(caller context.Context, w int64, note string) (p *core.Permit, err error) {
	ctx, done, err := s.sess.addWaiter(caller)
	if err != nil {
		return nil, err
	}
	defer done()
	var start time.Time
	defer func() {
		if err != nil && !start.IsZero() {
			s.observe(core.Event{Kind: core.EventAbandoned, Name: s.name, Weight: w, Wait: time.Since(start), Err: err, Ctx: caller})
		}
	}()
	for {
		sid, err := s.sess.get(ctx)
		if err != nil {
			return nil, s.errorOf(ctx, caller, "create session", err)
		}
		id := s.newID()
		sn, err := s.enqueue(ctx, id, w, note, sid)
		if errors.Is(err, errSession) {
			s.sess.invalidate(sid)
			continue
		}
		if err != nil {
			s.leave(ctx, id)
			return nil, s.errorOf(ctx, caller, "queue", err)
		}
		if start.IsZero() {
			start = time.Now()
			s.observe(core.Event{Kind: core.EventWait, Name: s.name, Weight: w, Ctx: caller})
		}
		p, err := s.await(ctx, sn, id, w, sid)
		if err != nil {
			s.leave(ctx, id)
			if errors.Is(err, core.ErrInvalidArgument) {
				return nil, err
			}
			return nil, s.errorOf(ctx, caller, "wait", err)
		}
		if p == nil {
			continue // our key vanished: queue again
		}
		if caller.Err() != nil || ctx.Err() != nil {
			// Granted as ctx ended: hand the permit on (go.dev/issue/63615).
			_ = p.ReleaseDetached(ctx, s.sess.ttl)
			return nil, s.errorOf(ctx, caller, "wait", ctx.Err())
		}
		s.observe(core.Event{Kind: core.EventAcquired, Name: s.name, Weight: w, Wait: time.Since(start), Ctx: caller})
		return p, nil
	}
}

// await waits until contender id is granted. It returns a nil permit and a
// nil error if the key vanished. The head of the queue watches the whole
// prefix (a release, a lost holder, a new limit decide its turn); any other
// waiter watches only the key of the waiter just ahead of it, which changes
// when that one is granted or leaves: then it may have become the head.
// (Having the next in line watch the prefix as well, so that it is awake
// with the state when the head is granted, shortened the chain of grants
// at limit > 1 but cost the agent a list of the queue per acquisition,
// and the agent's CPU bounds the rate more: measured, it was slower.)
func (s *Semaphore) await(ctx context.Context, sn *snapshot, id string, w int64, sid string) (*core.Permit, error) {
	key := s.prefix + id
	var err error
	for {
		if err == nil {
			err = ctx.Err() // also when a query returned without noticing
		}
		if err != nil {
			return nil, err
		}
		me := sn.keys[id]
		switch {
		case me == nil:
			return nil, nil
		case sn.holds(id): // handed over by a release
			return s.granted(ctx, id, w, sid, me.ModifyIndex, grantedAt(me)), nil
		}
		if pos := sn.position(key); pos > 0 {
			pred := sn.queue[pos-1]
			q := &api.QueryOptions{WaitIndex: pred.ModifyIndex, WaitTime: blockWait}
			p, _, gerr := s.kv.Get(pred.Key, q.WithContext(ctx))
			if gerr != nil {
				return nil, gerr
			}
			if p != nil && p.ModifyIndex > pred.ModifyIndex {
				if perm, gerr := s.grantBehind(ctx, p, me, w, sid); perm != nil || gerr != nil {
					return perm, gerr
				}
			}
			sn, err = s.read(ctx, 0)
			continue
		}
		if w > sn.st.Limit {
			return nil, tooHeavy(w, sn.st.Limit, s.name)
		}
		if sn.used+w <= sn.st.Limit {
			st := sn.st
			st.Holders = append(slices.Clip(st.Holders), holderEntry{ID: id, W: w})
			now := time.Now()
			ok, resp, cerr := s.commit(ctx, sn.lockOp(s.lockKey, st, true), grantOp(me, w, now, st))
			if cerr != nil {
				return nil, cerr
			}
			if ok {
				s.last.Store(sn.afterGrant(s.lockKey, st, key, sid, resp))
				return s.granted(ctx, id, w, sid, indexOf(resp, key), now), nil
			}
			sn, err = s.read(ctx, 0) // a concurrent write: look again
			continue
		}
		sn, err = s.read(ctx, sn.index)
	}
}

// enqueue creates contender id's key, locked by session sid, and reads
// the prefix in the same transaction: the snapshot it returns includes the
// new key.
func (s *Semaphore) enqueue(ctx context.Context, id string, w int64, note, sid string) (*snapshot, error) {
	ok, resp, err := s.commit(ctx,
		&api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVLock, Key: s.prefix + id, Session: sid, Value: mustJSON(contender{W: w, Q: time.Now().UnixMicro(), Owner: s.cfg.Owner, Note: note})}},
		&api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVGetTree, Key: s.prefix}})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("queue: %v", resp.Errors)
	}
	return s.parseTxn(resp.Results[1:])
}

// granted makes the permit of holder id and tracks it for renewal.
func (s *Semaphore) granted(ctx context.Context, id string, w int64, sid string, token uint64, at time.Time) *core.Permit {
	h := &holder{s: s, id: id, sid: sid, weight: w, lost: make(chan struct{}), ctx: ctx}
	p := backend.NewPermit(h, backend.Grant{Weight: w, Token: int64(token), GrantedAt: at, Lost: h.lost, ID: id})
	s.sess.hold(h)
	return p
}

// leave takes contender id out: it deletes a queued key, or releases a
// permit granted in a race and hands it on, with a ctx that outlives the
// caller's. On failure the key goes when the session ends.
func (s *Semaphore) leave(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.sess.ttl)
	defer cancel()
	if _, err := s.release(ctx, id); err != nil {
		s.report(unavailable("leave queue", s.name, err))
	}
}

// grantBehind grants contender me, whose predecessor in the queue was just
// granted (p is its key now, carrying the .lock value its grant stored, at
// .lock's index p.ModifyIndex), if that state has room for w even counting
// every holder listed in it as alive: one write and no read, so grants
// follow each other down the queue at one round trip each. me is then the
// head: nobody can queue ahead of it, and everyone ahead of p was granted
// or left. It returns a nil permit and error if there is no room or .lock
// changed since (then the caller reads).
func (s *Semaphore) grantBehind(ctx context.Context, p, me *api.KVPair, w int64, sid string) (*core.Permit, error) {
	var c contender
	if json.Unmarshal(p.Value, &c) != nil || c.At == 0 || c.Lock == nil {
		return nil, nil
	}
	st := *c.Lock
	if w > st.Limit || used(&st)+w > st.Limit {
		return nil, nil
	}
	id := me.Key[strings.LastIndexByte(me.Key, '/')+1:]
	st.Holders = append(slices.Clip(st.Holders), holderEntry{ID: id, W: w})
	now := time.Now()
	ok, resp, err := s.commit(ctx, &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCAS, Key: s.lockKey, Index: p.ModifyIndex, Value: mustJSON(st)}},
		grantOp(me, w, now, st))
	if err != nil || !ok {
		return nil, err
	}
	return s.granted(ctx, id, w, sid, indexOf(resp, me.Key), now), nil
}
