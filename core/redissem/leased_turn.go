package redissem

// A process's turn. When the fleet's queue serves a starved process, the
// units handed to it serve, one after another, the callers that were
// queued in it at that moment: in the default mode's strict FIFO they
// would be served before every caller that came later anywhere, and here
// each grant of the turn but the first is made in process, without a
// round trip. A turn makes at most as many grants as callers were queued
// when it began; the release that ends it gives the units back
// (share_give.lua), and the process joins the tail of the queue again for
// the callers that came meanwhile.

// setShareLocked applies the share that Redis holds for this process and
// whether another process is starved (a reply or a push). If the share now
// serves the head caller that Redis held this process queued for, its
// turn begins. l.mu is held.
func (l *leased) setShareLocked(share int64, contended bool) {
	queued := l.queuedLocked()
	l.share, l.contended = share, contended
	switch {
	case !contended:
		l.turnEnd = 0 // shares move by target again: no turn to end
	case queued && !l.queuedLocked():
		st := l.loc.State()
		l.turnEnd = st.Grants + max(1, st.WaitN)
	}
}

// keepForTurnLocked reports whether a release of weight w, while another
// process is starved, leaves its units to the next caller queued here
// rather than giving them back: this process's turn has grants left, and
// its share serves the head caller once w is released. l.mu is held; the
// local share still counts w in use.
func (l *leased) keepForTurnLocked(w int64) bool {
	if l.turnEnd == 0 {
		return false
	}
	st := l.loc.State()
	if st.Grants >= l.turnEnd {
		l.turnEnd = 0 // the turn is over
		return false
	}
	return st.WaitN > 0 && st.Head <= l.share-(st.InUse-w)
}
