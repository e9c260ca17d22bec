package redissem

import "time"

// Single-use takes. A process whose share is kept when unused must be told
// when another process is starved, so that it gives the share back: a
// note to it, a give-back from its loop and a note to the starved process
// for each such hand-off. A lone caller whose release will give the share
// back anyway (giveIdle: the share went back unused last time, or another
// process wanted it while it was kept unused, or it is the first use) need
// not be told. Its take is single-use: share_take.lua records the process
// as told, so a process that queues behind it does not tell it, and the
// give-back that its release queues (leased_batch.go) hands the units to
// the head of the fleet's queue.
//
// The share then serves that caller alone. If another caller of this
// process comes to use it (a local hand-off at the release, or a caller
// that takes back a queued give-back), the process is no longer what
// Redis holds it for: it asks at once for a beat of share.lua, which
// records whether it is told, and whose reply says whether another process
// is starved. Until that reply a starved process waits at most for that
// one round trip and the holds of those callers, as it would for a process
// that a note had not reached yet.

// singleUseLocked reports whether a take for a head caller that needs need,
// with demand callers' weight in all, is single-use: the share is empty,
// the callers are that one caller alone, and a release that leaves the
// share unused gives it back. l.mu is held.
func (l *leased) singleUseLocked(demand, need int64) bool {
	return l.giveIdle && l.share == 0 && demand <= need && !l.contended
}

// givesBackNextLocked reports, for a caller that comes after a release
// gave the unused share back, whether the next unused share goes back at
// once too (giveIdle): the caller came shareIdle or more after that
// give-back, or another process wanted a share kept unused here less than
// shareWanted ago (the shares move between processes: keeping one unused
// would cost a note to this process and a give-back from its loop). l.mu
// is held.
func (l *leased) givesBackNextLocked() bool {
	return time.Since(l.gaveAt) >= l.idle || time.Since(l.wantedAt) < shareWanted
}

// unsingleLocked ends the single use of the share: another caller uses it,
// and the loop runs share.lua at once (leanFull). l.mu is held.
func (l *leased) unsingleLocked() {
	l.single = false
	l.leanFull = true
	l.poke()
}
