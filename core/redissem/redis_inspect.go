package redissem

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

var _ core.Inspector = (*Semaphore)(nil)

// Inspect lists the holders, earliest lease end first, and the waiters,
// head of the queue first, at most limit of each; see core.Inspector. It
// costs one read-only script, which reads the state at one instant of
// Redis TIME (Snapshot.At) and changes nothing: a lease that has ended is
// left out even before a script reaps it, but a waiter whose process died
// is listed until its liveness ends (2/3 of its lease TTL after its last
// renewal), as it stays queued until then.
//
// The owner of a holder or waiter is its process's (WithOwner), stored
// once per process and semaphore, off the busy path: by the first Acquire
// of a process (and again about once per lease TTL) and by every
// heartbeat. It lasts 2 lease TTLs from its last write, then goes, so that
// a semaphore keeps no more owners than the processes that held or waited
// in the last 2 lease TTLs. A holder or waiter lists no owner if its
// process has none, or for a moment after the semaphore's state was lost
// (until that process's next Acquire or heartbeat). A note (core.WithNote)
// is stored with its permit; a waiter lists the time it queued only if it
// has a note. An adopted permit keeps its note and takes the adopter's
// owner. The round trip is bounded by ctx and the operation timeout.
func (s *Semaphore) Inspect(ctx context.Context, limit int) (core.Snapshot, error) {
	if err := backend.CheckInspectLimit(limit); err != nil {
		return core.Snapshot{}, err
	}
	rctx, cancel := bound(ctx, s.b.cfg.fault.opTimeout)
	defer cancel()
	v, err := s.b.callRetry(rctx, scriptInspect, scriptCmd(scriptInspect, s.keys, s.limit, limit))
	if err == nil {
		var snap core.Snapshot
		if snap, err = parseInspect(v); err == nil {
			return snap, nil
		}
	}
	if ctx.Err() != nil {
		return core.Snapshot{}, ctxError(ctx, s.name)
	}
	return core.Snapshot{}, unavailable("inspect", s.name, err)
}

var errInspectReply = errors.New("unexpected reply of inspect.lua")

// parseInspect reads inspect.lua's reply.
func parseInspect(v []any) (core.Snapshot, error) {
	if len(v) != 7 {
		return core.Snapshot{}, errInspectReply
	}
	var n [5]int64
	for i := range n {
		x, ok := v[i].(int64)
		if !ok {
			return core.Snapshot{}, errInspectReply
		}
		n[i] = x
	}
	hl, ok1 := v[5].([]any)
	wl, ok2 := v[6].([]any)
	if !ok1 || !ok2 || len(hl)%5 != 0 || len(wl)%3 != 0 {
		return core.Snapshot{}, errInspectReply
	}
	snap := core.Snapshot{At: time.UnixMicro(n[0]), Limit: n[1], InUse: n[2], Waiting: n[4]}
	for i := 0; i < len(hl); i += 5 {
		id, _ := hl[i].(string)
		end, _ := hl[i+1].(string)
		rec, _ := hl[i+2].(string)
		h, ok := parseHolder(id, rec)
		if !ok {
			return core.Snapshot{}, errInspectReply
		}
		if ms, err := strconv.ParseFloat(end, 64); err == nil {
			h.LeaseEnd = time.UnixMilli(int64(ms))
		}
		h.Owner, _ = hl[i+3].(string)
		note, _ := hl[i+4].(string)
		_, h.Note = parseNoteField(note)
		snap.Holders = append(snap.Holders, h)
	}
	for i := 0; i < len(wl); i += 3 {
		m, _ := wl[i].(string)
		w, ok := parseMember(m)
		if strings.HasPrefix(m, "f") {
			w, ok = parseFairMember(m)
		}
		if !ok {
			return core.Snapshot{}, errInspectReply
		}
		w.Position = int64(i / 3)
		w.Owner, _ = wl[i+1].(string)
		note, _ := wl[i+2].(string)
		w.Since, w.Note = parseNoteField(note)
		snap.Waiters = append(snap.Waiters, w)
	}
	snap.OmittedHolders = max(n[3]-int64(len(snap.Holders)), 0)
	snap.OmittedWaiters = max(n[4]-int64(len(snap.Waiters)), 0)
	return snap, nil
}

// parseHolder reads a holder's field: 'h<weight>:<token>:<grant_us>'
// (lib.lua).
func parseHolder(id, rec string) (core.Holder, bool) {
	f := strings.Split(strings.TrimPrefix(rec, "h"), ":")
	if len(f) < 2 || !strings.HasPrefix(rec, "h") {
		return core.Holder{}, false
	}
	h := core.Holder{ID: id}
	var err1, err2 error
	h.Weight, err1 = strconv.ParseInt(f[0], 10, 64)
	h.Token, err2 = strconv.ParseInt(f[1], 10, 64)
	if len(f) > 2 {
		if us, err := strconv.ParseInt(f[2], 10, 64); err == nil && us > 0 {
			h.GrantedAt = time.UnixMicro(us)
		}
	}
	return h, err1 == nil && err2 == nil
}

// parseMember reads a waiter's member of W:
// '<weight>:<ttl_ms>:<#chan>:<chan><id>' (lib.lua).
func parseMember(m string) (core.Waiter, bool) {
	f := strings.SplitN(m, ":", 4)
	if len(f) != 4 {
		return core.Waiter{}, false
	}
	w, err1 := strconv.ParseInt(f[0], 10, 64)
	n, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || n < 0 || n > len(f[3]) {
		return core.Waiter{}, false
	}
	return core.Waiter{Weight: w, ID: f[3][n:]}, true
}

// parseNoteField reads a note field, '<time_us>:<note>' (lib.lua); both are
// zero if it is absent or malformed.
func parseNoteField(f string) (at time.Time, note string) {
	us, note, ok := strings.Cut(f, ":")
	t, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil {
		return time.Time{}, ""
	}
	return time.UnixMicro(t), note
}
