package consul

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
)

// lockState is the value of the .lock key: the stored limit and the
// holders. Every grant and release is a check-and-set on it.
type lockState struct {
	Limit   int64         `json:"limit"`
	Pinned  bool          `json:"pinned,omitempty"` // set by SetLimit: the key is kept when idle
	Holders []holderEntry `json:"holders"`
}

type holderEntry struct {
	ID string `json:"id"` // the holder's contender key, relative to the prefix
	W  int64  `json:"w"`
}

// contender is the value of a contender key: its weight, and once granted
// the grant time (µs, clock of the writer) and a copy of the .lock value
// that the grant stored. Granting rewrites it, so the key's ModifyIndex
// becomes the Raft index of the grant, which is also .lock's: the waiter
// behind, which watches this key, learns .lock's state and index from it
// without a read.
type contender struct {
	W    int64      `json:"w"`
	At   int64      `json:"at,omitempty"`
	Lock *lockState `json:"lock,omitempty"`
	// For Inspect only: when it queued (µs, clock of the writer; 0 if it
	// was granted at once), its process's WithOwner and its WithNote.
	// JSON keeps any note apart from the other fields.
	Q     int64  `json:"q,omitempty"`
	Owner string `json:"owner,omitempty"`
	Note  string `json:"note,omitempty"`
}

// snapshot is one consistent read of a semaphore's prefix.
type snapshot struct {
	index uint64                 // X-Consul-Index of the read, for the next blocking query
	lock  *api.KVPair            // nil if the .lock key is absent
	st    lockState              // the .lock value without dead holders
	dead  bool                   // st dropped dead holders: the next write must store st
	keys  map[string]*api.KVPair // contender id -> key
	queue []*api.KVPair          // waiting contenders in arrival order (CreateIndex)
	used  int64                  // the weight held by live holders
}

// parse builds a snapshot of the pairs under the prefix. limit is the
// configured one, used when no .lock key is stored yet.
func parse(prefix string, pairs api.KVPairs, index uint64, limit int64) (*snapshot, error) {
	sn := &snapshot{index: index, keys: make(map[string]*api.KVPair, len(pairs)), st: lockState{Limit: limit}}
	for _, p := range pairs {
		id := strings.TrimPrefix(p.Key, prefix)
		if id == lockName {
			sn.lock = p
			if err := json.Unmarshal(p.Value, &sn.st); err != nil || sn.st.Limit <= 0 {
				return nil, fmt.Errorf("corrupt %s: %q", p.Key, p.Value)
			}
			continue
		}
		if p.Session != "" { // a key without session is dead: its session ended
			sn.keys[id] = p
		}
	}
	live := sn.st.Holders[:0:0]
	held := make(map[string]bool, len(sn.st.Holders))
	for _, h := range sn.st.Holders {
		if sn.keys[h.ID] == nil {
			sn.dead = true // its session ended: reap
			continue
		}
		live = append(live, h)
		held[h.ID] = true
		sn.used += h.W
	}
	sn.st.Holders = live
	for id, p := range sn.keys {
		if !held[id] {
			sn.queue = append(sn.queue, p)
		}
	}
	slices.SortFunc(sn.queue, func(a, b *api.KVPair) int {
		if a.CreateIndex != b.CreateIndex {
			if a.CreateIndex < b.CreateIndex {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Key, b.Key)
	})
	return sn, nil
}

const lockName = ".lock"

// holds reports whether id is a live holder.
func (sn *snapshot) holds(id string) bool {
	return slices.ContainsFunc(sn.st.Holders, func(h holderEntry) bool { return h.ID == id })
}

// position returns id's place in the queue, or -1.
func (sn *snapshot) position(key string) int {
	return slices.IndexFunc(sn.queue, func(p *api.KVPair) bool { return p.Key == key })
}

func weightOf(p *api.KVPair) int64 {
	var c contender
	if json.Unmarshal(p.Value, &c) != nil || c.W <= 0 {
		return 1 << 62 // corrupt: never fits, so it blocks nobody forever (it fails itself)
	}
	return c.W
}

func grantedAt(p *api.KVPair) time.Time {
	var c contender
	if json.Unmarshal(p.Value, &c) != nil || c.At == 0 {
		return time.Time{}
	}
	return time.UnixMicro(c.At)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs are marshalled
	}
	return b
}

// lockOp is the check-and-set that stores st over the .lock key seen in sn
// (or creates it), or deletes it when nothing is held or queued and the
// limit was not pinned, so idle semaphores leave nothing behind.
func (sn *snapshot) lockOp(key string, st lockState, queued bool) *api.TxnOp {
	var idx uint64
	if sn.lock != nil {
		idx = sn.lock.ModifyIndex
	}
	if len(st.Holders) == 0 && !queued && !st.Pinned {
		if sn.lock == nil {
			return &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: key}}
		}
		return &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVDeleteCAS, Key: key, Index: idx}}
	}
	return &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCAS, Key: key, Index: idx, Value: mustJSON(st)}}
}

// grantOp rewrites contender p as granted, on the condition that it did
// not change since the snapshot (it is still queued and alive). st is what
// the same transaction stores in .lock.
func grantOp(p *api.KVPair, w int64, now time.Time, st lockState) *api.TxnOp {
	var c contender // as queued: its owner, note and queue time stay
	_ = json.Unmarshal(p.Value, &c)
	c.W, c.At, c.Lock = w, now.UnixMicro(), &st
	return &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCAS, Key: p.Key, Index: p.ModifyIndex, Value: mustJSON(c)}}
}

// handOff adds to ops the grant of the queue's head if it fits in st (which
// it updates), in the same transaction that frees the capacity. Only the
// head is granted, so every grant has its own Raft index (its token); the
// waiter behind it watches the head's key and grants itself if it fits.
func (sn *snapshot) handOff(st *lockState, skip string, now time.Time) (ops []*api.TxnOp, queued bool) {
	for _, p := range sn.queue {
		if p.Key == skip {
			continue
		}
		w := weightOf(p)
		if w <= st.Limit && used(st)+w <= st.Limit {
			st.Holders = append(st.Holders, holderEntry{ID: p.Key[strings.LastIndexByte(p.Key, '/')+1:], W: w})
			ops = append(ops, grantOp(p, w, now, *st))
		}
		return ops, true
	}
	return nil, false
}

func used(st *lockState) int64 {
	var n int64
	for _, h := range st.Holders {
		n += h.W
	}
	return n
}

// afterGrant returns the snapshot that a successful grant of key (its
// transaction's response resp) leaves: st stored in .lock, key listed and
// out of the queue. Stored as the last snapshot, it lets the holder's
// Release hand its permit on without reading first.
func (sn *snapshot) afterGrant(lockKey string, st lockState, key, sid string, resp *api.TxnResponse) *snapshot {
	out := *sn
	out.keys = maps.Clone(sn.keys)
	out.st, out.dead = st, false
	out.used = used(&st)
	out.lock = &api.KVPair{Key: lockKey, ModifyIndex: indexOf(resp, lockKey)}
	id := key[strings.LastIndexByte(key, '/')+1:]
	out.keys[id] = &api.KVPair{Key: key, Session: sid, ModifyIndex: indexOf(resp, key)}
	out.queue = slices.DeleteFunc(slices.Clone(sn.queue), func(p *api.KVPair) bool { return p.Key == key })
	out.index = max(sn.index, out.keys[id].ModifyIndex)
	return &out
}
