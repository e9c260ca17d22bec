package consul

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/hashicorp/consul/api"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

// Semaphore is a counting, weighted, FIFO semaphore shared by every process
// that uses the same Consul datacenter, key prefix and name. See the
// package documentation for its guarantees. It is safe for concurrent use.
type Semaphore struct {
	kv       *api.KV
	txn      *api.Txn
	name     string
	label    string // the name observers see: name, or the key's label of a keyed one
	prefix   string // every key of the semaphore starts with it
	lockKey  string
	limit    int64 // configured; the limit stored in Consul wins
	cfg      backend.Config
	fallback *core.Local
	sess     *sessions
	idBase   string
	idSeq    atomic.Uint64
	// last is the latest snapshot this Semaphore read. Acquire and Release
	// act on it optimistically: every write they make is conditional, so a
	// stale snapshot only costs a failed transaction and a fresh read.
	last atomic.Pointer[snapshot]
}

var _ core.Semaphore = (*Semaphore)(nil)

// blockWait bounds every blocking query. Cancellation does not wait for it
// (the query carries the caller's ctx); it only bounds how long a waiter
// can miss a change it does not watch, such as its own key vanishing when
// its session was lost.
const blockWait = 5 * time.Second

// New returns the semaphore name of limit permits on Consul. Its keys live
// under the prefix (core.WithKeyPrefix, default "distsem:") + name + "/".
// It panics on a nil client, a limit <= 0, or a name that is empty or
// contains '/' or white space.
//
// The limit lives in Consul. The first process to use the semaphore stores
// its configured limit; a process configured differently adopts the stored
// one (Stats reports it). SetLimit changes it for everyone.
//
// Options: core.WithDefaultLeaseTTL sets the TTL of the Consul session that
// ties this Semaphore's permits and waiters to the process (default 10s;
// Consul rejects TTLs below its session_ttl_min, 10s by default, and then
// every Acquire fails with ErrUnavailable). core.WithKeyPrefix,
// core.WithObserver, core.WithOnError and core.WithFailurePolicy behave as
// on the Redis backend. New panics, naming the option, on any other
// (core.WithLimits and core.WithMaxIdleKeys are NewKeyed's). All permits of
// one Semaphore share its session, so a per-call core.WithLeaseTTL fails
// the call with an ErrInvalidArgument error.
//
// New does no I/O and starts no goroutine; the first Acquire creates the
// session and starts its renewal loop, which Close stops.
func New(client *api.Client, name string, limit int64, opts ...core.Option) *Semaphore {
	if client == nil {
		panic("consul: New expects a non-nil client")
	}
	if limit <= 0 {
		panic(fmt.Sprintf("consul: New expects limit > 0, got %d", limit))
	}
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return r == '/' || unicode.IsSpace(r) }) >= 0 {
		panic(fmt.Sprintf("consul: semaphore name %q must be non-empty, without '/' or white space", name))
	}
	cfg := backend.ResolveOptions(opts...)
	if cfg.Keyed {
		panic("consul: New does not take core.WithLimits or core.WithMaxIdleKeys: they configure NewKeyed")
	}
	return newSemaphore(client, name, name, limit, cfg)
}

func newSemaphore(client *api.Client, name, label string, limit int64, cfg backend.Config) *Semaphore {
	prefix := cfg.KeyPrefix + name + "/"
	s := &Semaphore{kv: client.KV(), txn: client.Txn(), name: name, label: label, prefix: prefix, lockKey: prefix + lockName,
		limit: limit, cfg: cfg, idBase: rand.Text()[:16] + "."}
	s.sess = newSessions(client, s)
	if k := cfg.Policy.LocalLimit(); k > 0 {
		s.fallback = core.NewLocal(k, core.WithObserver(cfg.Observer))
	}
	return s
}

// Acquire blocks until the permits (core.WithWeight, default 1) are granted
// in FIFO order across every process, ctx ends, the semaphore is closed or
// Consul fails (then the failure policy decides). On success the permit is
// held; on failure nothing of the call remains in Consul: a waiter whose
// ctx ends deletes its contender key, and a grant that raced it is released
// and handed to the next waiter. Errors: an ErrNoPermit one if ctx's
// deadline passed, context.Canceled, ErrInvalidArgument for a weight above
// the stored limit, ErrClosed, or ErrUnavailable (fail closed).
func (s *Semaphore) Acquire(ctx context.Context, opts ...core.AcquireOption) (*core.Permit, error) {
	return s.acquire(ctx, false, opts)
}

// TryAcquire grants the permits only if they fit and nobody is queued;
// otherwise it returns an ErrNoPermit error. It never waits for a permit,
// but makes up to three round trips (two the first time: the session).
func (s *Semaphore) TryAcquire(ctx context.Context, opts ...core.AcquireOption) (*core.Permit, error) {
	return s.acquire(ctx, true, opts)
}

// SetLimit stores a new limit for every process sharing the semaphore, and
// keeps the .lock key when idle. Raising it lets the head of the queue (and
// then the waiters behind it) in at once; lowering it admits no one until
// the permits in use fall below it, and fails queued requests heavier than
// it with an ErrInvalidArgument error when they reach the head.
func (s *Semaphore) SetLimit(ctx context.Context, limit int64) error {
	if limit <= 0 {
		return fmt.Errorf("%w: limit %d must be positive", core.ErrInvalidArgument, limit)
	}
	for {
		sn, err := s.read(ctx, 0)
		if err != nil {
			return s.report(unavailable("set limit", s.name, err))
		}
		st := sn.st
		st.Limit, st.Pinned = limit, true
		ok, _, err := s.commit(ctx, sn.lockOp(s.lockKey, st, true))
		if err != nil {
			return s.report(unavailable("set limit", s.name, err))
		}
		if ok {
			return nil
		}
	}
}

// Stats returns the limit in force (the stored one, or the configured one
// before any use), the weight held by live holders and the number of
// queued waiters, from one consistent read. Holders whose session ended
// are not counted, even before a write reaps them.
func (s *Semaphore) Stats(ctx context.Context) (core.Stats, error) {
	sn, err := s.read(ctx, 0)
	if err != nil {
		return core.Stats{}, unavailable("stats", s.name, err)
	}
	return core.Stats{Limit: sn.st.Limit, InUse: sn.used, Waiting: int64(len(sn.queue))}, nil
}

// Close stops the session's renewal loop. Queued Acquire calls leave the
// queue and return ErrClosed, and so do later ones. Permits still held are
// no longer renewed and their Lost channels are closed; Release still
// returns them at once, otherwise they come back when the session expires.
// With no permit held, Close destroys the session. Close does not close the
// client. It returns nil; later calls do nothing.
func (s *Semaphore) Close() error {
	s.sess.close()
	return nil
}

func (s *Semaphore) newID() string {
	return s.idBase + strconv.FormatUint(s.idSeq.Add(1), 36)
}

// read lists the prefix. With index > 0 it is a blocking query that
// returns when something under the prefix changed after index, or after
// blockWait.
func (s *Semaphore) read(ctx context.Context, index uint64) (*snapshot, error) {
	q := &api.QueryOptions{WaitIndex: index, WaitTime: blockWait}
	pairs, meta, err := s.kv.List(s.prefix, q.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	sn, err := parse(s.prefix, pairs, meta.LastIndex, s.limit)
	if err == nil {
		s.last.Store(sn)
	}
	return sn, err
}

// commit runs ops as one transaction. ok is false if a check failed (a
// concurrent change: read again); errSession if our session is gone.
func (s *Semaphore) commit(ctx context.Context, ops ...*api.TxnOp) (ok bool, resp *api.TxnResponse, err error) {
	ok, resp, _, err = s.txn.Txn(ops, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil || ok {
		return ok, resp, err
	}
	for _, e := range resp.Errors {
		if strings.Contains(e.What, "session") {
			return false, resp, errSession
		}
	}
	return false, resp, nil
}

var errSession = errors.New("consul session invalid")

func unavailable(op, name string, cause error) error {
	return fmt.Errorf("%w: %s %q: %w", core.ErrUnavailable, op, name, cause)
}

func (s *Semaphore) report(err error) error {
	if s.cfg.OnError != nil {
		s.cfg.OnError(err)
	}
	s.observe(core.Event{Kind: core.EventBackendError, Name: s.name, Err: err})
	return err
}

func (s *Semaphore) observe(e core.Event) {
	if s.cfg.Observer != nil {
		e.Name = s.label
		s.cfg.Observer.Observe(e)
	}
}

// failed applies the failure policy to err, an ErrUnavailable error.
func (s *Semaphore) failed(ctx context.Context, err error, try bool, opts []core.AcquireOption, weight int64) (*core.Permit, error) {
	switch {
	case s.cfg.Policy.Open():
		return backend.NewPermit(nil, backend.Grant{Weight: weight}), nil
	case s.fallback != nil && try:
		return s.fallback.TryAcquire(ctx, opts...)
	case s.fallback != nil:
		return s.fallback.Acquire(ctx, opts...)
	}
	return nil, err
}
