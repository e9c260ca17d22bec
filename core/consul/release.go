package consul

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/consul/api"
)

// release frees contender id, a holder or a waiter, and reports whether
// it was a live holder. It makes one transaction, or two if a hand-off
// lost a race (and one more to delete .lock when it leaves the semaphore
// idle).
//
// A holder of the whole limit (always so at limit 1) frees its permits and
// grants the head of the queue in one check-and-set on .lock, from its last
// snapshot: nobody can have been granted since its own grant, so .lock
// has not changed (short of SetLimit or a lost holder), and the head's
// grant is this release's write. Any other release, or one whose
// check-and-set failed, only deletes its key: a holder whose key
// is gone counts for nobody, and the head of the queue, which watches the
// prefix, wakes on the deletion and grants itself (and reaps the entry).
// So releases never race each other on .lock: with several holders each
// one changed .lock since the others read it, and a failed check-and-set
// costs a Raft write and a read before the next try.
func (s *Semaphore) release(ctx context.Context, id string) (bool, error) {
	key := s.prefix + id
	if sn := s.last.Load(); sn != nil && sn.keys[id] != nil && sn.holds(id) && len(sn.st.Holders) == 1 && sn.used == sn.st.Limit {
		st := sn.st
		st.Holders = nil
		hand, queued := sn.handOff(&st, key, time.Now())
		ops := append([]*api.TxnOp{sn.lockOp(s.lockKey, st, queued)}, hand...)
		ops = append(ops, // check-index fails if the key is gone (its session ended), delete-cas would not
			&api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCheckIndex, Key: key, Index: sn.keys[id].ModifyIndex}},
			&api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: key}})
		ok, _, err := s.commit(ctx, ops...)
		if err != nil || ok {
			return ok, err
		}
	}
	return s.free(ctx, id)
}

// free deletes contender id's key and reads the prefix just before, in
// one transaction that cannot conflict. If that leaves the semaphore idle
// it deletes the unpinned .lock, as a write that frees the last permit
// does.
func (s *Semaphore) free(ctx context.Context, id string) (bool, error) {
	key := s.prefix + id
	ok, resp, err := s.commit(ctx,
		&api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVGetTree, Key: s.prefix}},
		&api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: key}})
	if err != nil {
		return false, err
	}
	if !ok {
		return false, fmt.Errorf("release: %v", resp.Errors)
	}
	sn, err := s.parseResults(resp.Results) // not stored yet: changed below
	if err != nil {
		return false, nil // the key is deleted; the corrupt .lock fails the next grant
	}
	held := sn.holds(id) // read before the delete: listed and alive
	if me := sn.keys[id]; me != nil {
		delete(sn.keys, id)
		sn.queue = slices.DeleteFunc(sn.queue, func(p *api.KVPair) bool { return p == me })
		for _, h := range sn.st.Holders {
			if h.ID == id {
				sn.used -= h.W
			}
		}
		sn.st.Holders = slices.DeleteFunc(sn.st.Holders, func(h holderEntry) bool { return h.ID == id })
		sn.dead = sn.dead || held
	}
	s.last.Store(sn)
	if sn.lock != nil && len(sn.st.Holders) == 0 && len(sn.queue) == 0 && !sn.st.Pinned {
		// Idle: a failure means someone wrote .lock since, so it is in use.
		_, _, err = s.commit(ctx, sn.lockOp(s.lockKey, sn.st, false))
	}
	return held, err
}

// parseTxn parses the results of a transaction's KVGetTree on the prefix
// into a snapshot and makes it the last one.
func (s *Semaphore) parseTxn(results api.TxnResults) (*snapshot, error) {
	sn, err := s.parseResults(results)
	if err == nil {
		s.last.Store(sn)
	}
	return sn, err
}

// parseResults parses the results of a transaction's KVGetTree on the
// prefix into a snapshot.
func (s *Semaphore) parseResults(results api.TxnResults) (*snapshot, error) {
	var pairs api.KVPairs
	var index uint64
	for _, r := range results {
		if r != nil && r.KV != nil && len(r.KV.Key) >= len(s.prefix) && r.KV.Key[:len(s.prefix)] == s.prefix {
			pairs = append(pairs, r.KV)
			index = max(index, r.KV.ModifyIndex)
		}
	}
	return parse(s.prefix, pairs, index, s.limit)
}
