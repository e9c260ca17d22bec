package redissem

import "time"

// The owner (core.WithOwner) of this process's holders and waiters is
// stored once per process and semaphore, not per holder: an owner record
// (lib.lua, F.own) keyed by the ids' random base, which inspect.lua finds
// from each id. It is written off the busy path: by every heartbeat, and by
// the acquire or adopt script when the record may end before the lease
// asked for would (ownerEnd), which is about once per lease TTL. A record
// lasts 2 lease TTLs from its last write and is then reaped like a
// tombstone, so a semaphore keeps at most one per process that held or
// waited in the last 2 lease TTLs. A script that finds the state made
// afresh (keys expired or lost) and writes no record says so (reply.lone),
// and the next acquire writes it again.

// ownerDue returns the time now and the owner argument of an acquire of a
// lease of ttl: the owner if the record may end before the lease, ""
// otherwise or without an owner.
func (s *Semaphore) ownerDue(ttl time.Duration) (time.Time, string) {
	now := time.Now()
	if s.b.cfg.owner == "" || now.Add(ttl).UnixNano() < s.ownerEnd.Load() {
		return now, ""
	}
	return now, s.b.cfg.owner
}

// ownerStored notes that a script sent at sent stored the owner record for
// keep from its run (which came after sent). A reply that says the record
// is gone (reply.lone) resets ownerEnd instead (runScript).
func (s *Semaphore) ownerStored(sent time.Time, keep time.Duration) {
	end := sent.Add(keep).UnixNano()
	for {
		cur := s.ownerEnd.Load()
		if end <= cur || s.ownerEnd.CompareAndSwap(cur, end) {
			return
		}
	}
}
