package adaptive

import (
	"context"
	"math/rand/v2"
	"time"
)

// loop syncs this process's samples once per window, at the end of each
// window in the store's clock plus a phase of its own (so that processes
// do not all arrive at once), and computes the windows the store elects
// it for. It returns when ctx ends.
func (l *Limiter) loop(ctx context.Context) {
	defer close(l.done)
	length := l.cfg.windowDur
	phase := time.Duration(rand.Int64N(int64(length)/10 + 1))
	var (
		offset time.Duration // the store's clock − this process's
		next   int64         // the window to sync next; 0 until the first reply
	)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w := l.take()
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, l.cfg.opTimeout)
		r, err := l.store.Sync(rctx, SyncRequest{Process: l.cfg.process, Length: length, Window: next, Samples: w})
		cancel()
		if err != nil {
			// The samples are dropped: sent late, they would blur the
			// window they land in. The limit stays as it is.
			l.fail(err)
			if next != 0 {
				next++
			}
			t.Reset(l.untilEnd(next, offset, phase))
			continue
		}
		recv := time.Now()
		offset = r.Now.Sub(sent.Add(recv.Sub(sent) / 2))
		next = r.Window + 1
		if r.HasState {
			l.recommended.Store(r.State.Applied)
			l.observe(Event{Kind: EventState, Window: r.State.Window, Limit: r.State.Applied, Previous: r.State.Applied,
				Baseline: seconds(r.State.Baseline), Latency: seconds(r.State.Latency), MonitorOnly: l.cfg.monitor})
		}
		if r.Elected {
			l.decide(ctx, r)
		}
		t.Reset(l.untilEnd(next, offset, phase))
	}
}

// untilEnd returns how long until window n ends in the store's clock, plus
// phase; a window after an unknown one (n = 0) is one window away.
func (l *Limiter) untilEnd(n int64, offset, phase time.Duration) time.Duration {
	if n == 0 {
		return l.cfg.windowDur
	}
	end := time.Unix(0, (n+1)*int64(l.cfg.windowDur))
	return max(end.Sub(time.Now().Add(offset))+phase, 0)
}

// decide computes window r.Window − 1, which the store elected this
// process for, sets the limit (unless monitor-only) and saves the state.
// On a failure nothing is saved: the next elected process computes from
// the state before.
func (l *Limiter) decide(ctx context.Context, r SyncReply) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.opTimeout)
	defer cancel()
	st := r.State
	if !r.HasState {
		stats, err := l.sem.Stats(ctx)
		if err != nil {
			l.fail(err)
			return
		}
		st = l.cfg.start(stats.Limit)
	}
	if st.Window >= r.Window-1 {
		return // computed already (a Sync retried after its reply was lost)
	}
	prev := st.Applied
	st, reason := l.cfg.next(st, r.Window-1, r.Window+1, r.Aggregate)
	if !l.cfg.monitor && st.Applied != prev {
		if err := l.sem.SetLimit(ctx, st.Applied); err != nil {
			l.fail(err)
			return
		}
	}
	if err := l.store.Save(ctx, l.cfg.windowDur, st); err != nil {
		l.fail(err)
		return
	}
	l.recommended.Store(st.Applied)
	a := r.Aggregate
	var lat time.Duration
	if a.Samples > 0 {
		lat = a.Latency / time.Duration(a.Samples)
	}
	l.observe(Event{Kind: EventDecision, Window: st.Window, Limit: st.Applied, Previous: prev, Baseline: seconds(st.Baseline),
		Latency: lat, Samples: a.Samples, Failed: a.Failed, TimedOut: a.TimedOut, Reason: reason, MonitorOnly: l.cfg.monitor})
}

func (l *Limiter) fail(err error) {
	if l.cfg.onError != nil {
		l.cfg.onError(err)
	}
	l.observe(Event{Kind: EventError, Err: err})
}

func (l *Limiter) observe(e Event) {
	if l.cfg.observer != nil {
		l.cfg.observer.Observe(e)
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
