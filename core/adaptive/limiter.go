package adaptive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

// Limiter is a semaphore whose limit follows the protected resource. It
// wraps a semaphore with a stored limit (core.Local, redissem's Semaphore,
// Leased or Quorum, consul's Semaphore) and learns from each of its
// permits: the time from grant to Release (or the latency given with
// ContextWithSample) and the outcome given with ContextWithOutcome. Once
// per window it sends this process's samples to the Store; the one process
// the Store elects for a window computes the next limit from the whole
// fleet's samples and stores it with the semaphore's SetLimit.
//
// Acquire and TryAcquire are the wrapped semaphore's, and so are their
// guarantees and errors; its permits are wrapped by backend.WrapPermit (same
// token, lease, Lost and ID). Manage the wrapped semaphore itself (Close,
// Stats); Close the Limiter before it.
type Limiter struct {
	sem   core.LimitSemaphore
	store Store
	cfg   config

	// This window's samples, swapped out by each sync.
	n, lat, failed, timedOut atomic.Int64

	recommended atomic.Int64
	stop        context.CancelFunc
	done        chan struct{}
	closeOnce   sync.Once
}

var _ core.Semaphore = (*Limiter)(nil)

// New returns a Limiter of sem whose processes share store, and starts its
// loop (one goroutine, stopped by Close). It returns an error matching
// core.ErrInvalidArgument, and starts nothing, if sem or store is nil, if
// store is a *MemStore and sem is not a *core.Local (the processes of a
// network semaphore must share their samples; each would otherwise set the
// limit from its own), or if an option is out of range (see each option).
func New(sem core.LimitSemaphore, store Store, opts ...Option) (*Limiter, error) {
	if sem == nil || store == nil {
		return nil, invalid("New expects a semaphore and a store")
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	if _, mem := store.(*MemStore); mem {
		if _, local := sem.(*core.Local); !local {
			return nil, invalid("a MemStore serves the processes of one semaphore only when they are one: use it with core.Local, and a Store shared by every process (core/adaptive/redisstore) with a network semaphore")
		}
	}
	if !cfg.processSet {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.process = hex.EncodeToString(b[:])
	}
	ctx, stop := context.WithCancel(context.Background())
	l := &Limiter{sem: sem, store: store, cfg: cfg, stop: stop, done: make(chan struct{})}
	go l.loop(ctx)
	return l, nil
}

// Acquire is the wrapped semaphore's Acquire; the permit's Release
// records a sample.
func (l *Limiter) Acquire(ctx context.Context, opts ...core.AcquireOption) (*core.Permit, error) {
	p, err := l.sem.Acquire(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return l.wrap(p), nil
}

// TryAcquire is the wrapped semaphore's TryAcquire; the permit's Release
// records a sample.
func (l *Limiter) TryAcquire(ctx context.Context, opts ...core.AcquireOption) (*core.Permit, error) {
	p, err := l.sem.TryAcquire(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return l.wrap(p), nil
}

// Recommended returns the limit of the controller's state as of this
// process's last sync: the limit set or, in monitor-only mode, the one it
// would set. It is 0 before the first decision.
func (l *Limiter) Recommended() int64 { return l.recommended.Load() }

// Record adds a sample that no permit of the Limiter carries, such as the
// latency of work admitted by other means while in monitor-only mode. It
// returns an error matching core.ErrInvalidArgument, and records nothing,
// for a negative latency.
func (l *Limiter) Record(s Sample) error {
	if s.Latency < 0 {
		return invalid("negative latency %v", s.Latency)
	}
	l.add(s)
	return nil
}

// Close stops the loop and waits for it; a sync or decision in flight is
// abandoned (its window is computed by the next process). Permits already
// granted stay valid. It does not close the wrapped semaphore. It returns
// nil.
func (l *Limiter) Close() error {
	l.closeOnce.Do(func() {
		l.stop()
		<-l.done
	})
	return nil
}

func (l *Limiter) add(s Sample) {
	switch s.Outcome {
	case Ignored:
		return
	case Failed:
		l.failed.Add(1)
	case TimedOut:
		l.timedOut.Add(1)
	}
	l.lat.Add(int64(s.Latency))
	l.n.Add(1)
}

// take returns this window's samples and starts the next window.
func (l *Limiter) take() Window {
	return Window{Samples: l.n.Swap(0), Latency: time.Duration(l.lat.Swap(0)), Failed: l.failed.Swap(0), TimedOut: l.timedOut.Swap(0)}
}

// held is the record of one wrapped permit: its Releaser.
type held struct {
	l     *Limiter
	inner *core.Permit
	start time.Time
}

func (l *Limiter) wrap(p *core.Permit) *core.Permit {
	return backend.WrapPermit(p, &held{l: l, inner: p, start: time.Now()})
}

// ReleasePermit releases the wrapped permit and records its sample: the
// hold time, or the latency and outcome in ctx (ContextWithSample).
func (h *held) ReleasePermit(ctx context.Context, _ *core.Permit) error {
	s, _ := sampleFrom(ctx)
	if s.Latency == 0 {
		s.Latency = time.Since(h.start)
	}
	err := h.inner.Release(ctx)
	if s.Latency < 0 {
		return errors.Join(err, invalid("negative latency %v", s.Latency))
	}
	h.l.add(s)
	return err
}
