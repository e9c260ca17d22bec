package redissem

import "context"

// How a leased process loses its share: an outage that outlasts the lease
// (setDown), a share gone from Redis (loseAll), and Close (shutdown).

// setDown records whether the process is without a valid share while Redis
// is unreachable, and cause, the failed beat's error; on the way down it
// ends the local waits, which then take the failure policy.
func (l *leased) setDown(down bool, cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down, l.downErr = down, nil
	if down {
		l.downErr = cause
		for w := range l.waiting {
			w.cancel(l.outage())
		}
	}
}

// loseAll closes Lost on every permit held: the share covering them is gone.
func (l *leased) loseAll() {
	l.mu.Lock()
	var lost []*leasedPermit
	for p, was := range l.held {
		if !was {
			l.held[p] = true
			lost = append(lost, p)
		}
	}
	l.mu.Unlock()
	for _, p := range lost {
		l.s.b.cfg.reportLost(p.ctx, l.s.label, p.weight, nil, p.lost)
	}
}

// shutdown runs at Close: local waiters get ErrClosed, held permits are
// lost, and the share goes back to Redis (bounded by the operation
// timeout) unless permits are still held: then it comes back when its
// lease ends, as the permits of the default mode do.
func (l *leased) shutdown() {
	l.unroute()
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.slot <- struct{}{} // a give-back in flight ends first; none starts now
	_ = l.loc.Close()
	l.mu.Lock()
	holding := len(l.held) > 0
	l.mu.Unlock()
	l.loseAll()
	if holding {
		return // their share comes back when its lease ends, as in the default mode
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.s.b.cfg.fault.opTimeout)
	_, _ = l.run(ctx, "leave", 0)
	cancel()
}
