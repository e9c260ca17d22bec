package redissem

import (
	"context"
	"sync"
	"time"
)

// serverClock estimates the offset of Redis TIME from the local clock,
// from the round trips of one semaphore (one node, also on Cluster).
type serverClock struct {
	mu     sync.Mutex
	known  bool
	offset time.Duration // server - local
	err    time.Duration // half the round trip of the estimate
}

func (c *serverClock) learn(sent, recv time.Time, nowUS int64) {
	if nowUS == 0 {
		return
	}
	rtt := recv.Sub(sent)
	mid := sent.Add(rtt / 2)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.known = true
	c.offset = time.UnixMicro(nowUS).Sub(mid)
	c.err = rtt / 2
}

// local converts a Redis TIME (µs) to the local clock, if an estimate of
// the offset exists.
func (c *serverClock) local(us int64) (time.Time, bool) {
	if us == 0 {
		return time.Time{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known {
		return time.Time{}, false
	}
	return time.UnixMicro(us).Add(-c.offset), true
}

// deadlineMargin is added to a request's deadline in server time, beyond
// the estimate's own error: a request refused by it is a spurious failure.
const deadlineMargin = 100 * time.Millisecond

// serverDeadline is the Redis TIME (µs) after which an acquire sent now
// must be refused: the end of this round trip's operation timeout (or of
// ctx, if sooner), plus margins. 0 means no deadline (no estimate yet).
func (s *Semaphore) serverDeadline(ctx context.Context, wider bool) int64 {
	s.clock.mu.Lock()
	known, offset, e := s.clock.known, s.clock.offset, s.clock.err
	s.clock.mu.Unlock()
	if !known {
		return 0
	}
	end := time.Now().Add(s.b.cfg.fault.opTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(end) {
		end = d
	}
	margin := deadlineMargin + e
	if wider {
		margin *= 4
	}
	return end.Add(offset + margin).UnixMicro()
}
