package consul

import (
	"context"
	"encoding/json"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

var _ core.Inspector = (*Semaphore)(nil)

// Inspect lists the holders, oldest grant first, and the waiters, head of
// the queue first, at most limit of each, from one consistent read of the
// semaphore's prefix; see core.Inspector. Owner and note come from each
// contender key's value, where the Acquire that made it stored them (JSON:
// a note cannot reach another field). A holder's token is the Raft index
// of its grant; its grant time and a waiter's queue time are the writing
// process's clock; LeaseEnd is zero: the lease is the session's, whose
// TTL Consul keeps and does not publish. A waiter's ID is its contender
// key, relative to the prefix.
func (s *Semaphore) Inspect(ctx context.Context, limit int) (core.Snapshot, error) {
	if err := backend.CheckInspectLimit(limit); err != nil {
		return core.Snapshot{}, err
	}
	sn, err := s.read(ctx, 0)
	if err != nil {
		return core.Snapshot{}, unavailable("inspect", s.name, err)
	}
	snap := core.Snapshot{At: time.Now(), Limit: sn.st.Limit, InUse: sn.used, Waiting: int64(len(sn.queue))}
	for _, h := range sn.st.Holders {
		if len(snap.Holders) == limit {
			snap.OmittedHolders++
			continue
		}
		p := sn.keys[h.ID]
		var c contender
		_ = json.Unmarshal(p.Value, &c)
		hd := core.Holder{ID: h.ID, Weight: h.W, Token: int64(p.ModifyIndex), Owner: c.Owner, Note: c.Note}
		if c.At != 0 {
			hd.GrantedAt = time.UnixMicro(c.At)
		}
		snap.Holders = append(snap.Holders, hd)
	}
	for i, p := range sn.queue {
		if i == limit {
			snap.OmittedWaiters = int64(len(sn.queue) - limit)
			break
		}
		var c contender
		_ = json.Unmarshal(p.Value, &c)
		w := core.Waiter{Position: int64(i), ID: p.Key[len(s.prefix):], Weight: c.W, Owner: c.Owner, Note: c.Note}
		if c.Q != 0 {
			w.Since = time.UnixMicro(c.Q)
		}
		snap.Waiters = append(snap.Waiters, w)
	}
	return snap, nil
}
