package redissem

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/distsem/distsem/core"
)

// metaArg is acquire.lua's meta of a permit with note: "" when there is
// neither owner nor note, so that nothing more is stored.
func (c *config) metaArg(note string) string {
	switch {
	case note == "":
		return c.meta
	case c.meta == "":
		return "0:" + note
	}
	return c.meta + note
}

var _ core.Inspector = (*Semaphore)(nil)

// Inspect lists the holders, earliest lease end first, and the waiters,
// head of the queue first, at most limit of each; see core.Inspector. It
// costs one read-only script, which reads the state at one instant of
// Redis TIME (Snapshot.At) and changes nothing: a lease that has ended is
// left out even before a script reaps it, but a waiter whose process died
// is listed until its liveness ends (2/3 of its lease TTL after its last
// renewal), as it stays queued until then. A holder or waiter whose
// process gave no owner and no note lists neither, nor, for a waiter, the
// time it queued; an adopted permit keeps the owner and note of its
// Acquire. The round trip is bounded by ctx and the operation timeout.
func (s *Semaphore) Inspect(ctx context.Context, limit int) (core.Snapshot, error) {
	if err := core.CheckInspectLimit(limit); err != nil {
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
	if !ok1 || !ok2 || len(hl)%4 != 0 || len(wl)%2 != 0 {
		return core.Snapshot{}, errInspectReply
	}
	snap := core.Snapshot{At: time.UnixMicro(n[0]), Limit: n[1], InUse: n[2], Waiting: n[4]}
	for i := 0; i < len(hl); i += 4 {
		id, _ := hl[i].(string)
		end, _ := hl[i+1].(string)
		rec, _ := hl[i+2].(string)
		meta, _ := hl[i+3].(string)
		h, ok := parseHolder(id, rec)
		if !ok {
			return core.Snapshot{}, errInspectReply
		}
		if ms, err := strconv.ParseFloat(end, 64); err == nil {
			h.LeaseEnd = time.UnixMilli(int64(ms))
		}
		_, h.Owner, h.Note = parseMeta(meta)
		snap.Holders = append(snap.Holders, h)
	}
	for i := 0; i < len(wl); i += 2 {
		m, _ := wl[i].(string)
		meta, _ := wl[i+1].(string)
		w, ok := parseMember(m)
		if !ok {
			return core.Snapshot{}, errInspectReply
		}
		w.Position = int64(i / 2)
		w.Since, w.Owner, w.Note = parseMeta(meta)
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

// parseMeta reads an id's meta, '<time_us>:<#owner>:<owner><note>'
// (lib.lua); all are zero if it is absent or malformed.
func parseMeta(meta string) (at time.Time, owner, note string) {
	us, rest, ok1 := strings.Cut(meta, ":")
	n, rest, ok2 := strings.Cut(rest, ":")
	t, err1 := strconv.ParseInt(us, 10, 64)
	k, err2 := strconv.Atoi(n)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || k < 0 || k > len(rest) {
		return time.Time{}, "", ""
	}
	return time.UnixMicro(t), rest[:k], rest[k:]
}
