package core

import (
	"context"
	"io"
	"sync"

	"github.com/distsem/distsem/core/internal/idle"
	"github.com/distsem/distsem/core/internal/names"
)

// KeyedSemaphore hands out permits per key: one semaphore per route,
// method or tenant. *Keyed implements it.
type KeyedSemaphore interface {
	// Acquire is Semaphore.Acquire on the semaphore of key.
	Acquire(ctx context.Context, key string, opts ...AcquireOption) (*Permit, error)
	// TryAcquire is Semaphore.TryAcquire on the semaphore of key.
	TryAcquire(ctx context.Context, key string, opts ...AcquireOption) (*Permit, error)
}

// LimitSemaphore is a semaphore whose limit can be read and changed: what
// a keyed semaphore needs of each key's semaphore. *Local and the network
// backends implement it.
type LimitSemaphore interface {
	Semaphore
	// SetLimit changes the limit for every holder of the semaphore.
	SetLimit(ctx context.Context, limit int64) error
	// Stats returns the limit in force, the permits in use and the
	// queued waiters.
	Stats(ctx context.Context) (Stats, error)
}

// Keyed hands out one semaphore per key, created on first use with the
// default limit or the key's override (WithLimits, SetLimit). Memory stays
// bounded when keys come from untrusted input: a key with no permit held and
// no waiter in this process is idle, and only the WithMaxIdleKeys most
// recently used idle keys are kept; older ones are dropped and created again
// on next use. With the Redis backend the keys of an idle semaphore expire
// in Redis one minute after its last lease or waiter would have.
//
// The bound is in bytes too: a key longer than MaxKeyLen bytes is kept,
// and shown to observers, as its SHA-256 (see KeyLabel), so an idle key
// costs at most about 1 KiB. No key reaches another key's semaphore nor a
// plain one (see Key.Name).
//
// Overrides set by WithLimits and SetLimit are kept for the life of the
// Keyed; they come from configuration, not from requests.
type Keyed struct {
	def     int64
	newSem  func(k Key, limit int64) LimitSemaphore // a *Local it returns is owned by its entry (see ref)
	closeFn func() error                            // nil: close each key's semaphore (evicted or at Close)
	closing sync.WaitGroup                          // closes of evicted semaphores, waited for by Close

	mu      sync.Mutex
	entries map[names.KeyID]*keyedEntry
	idle    idle.List[*keyedEntry] // the entries with refs == 0
	limits  map[names.KeyID]int64
	fair    map[names.KeyID]Fairness // SetFairness of in-process keys, for when they are made again
	closed  bool
}

type keyedEntry struct {
	k     *Keyed
	key   names.KeyID
	sem   LimitSemaphore
	local *Local // sem, when it is a Local: its permits are e's (NewLocalKeyed)
	refs  int
	elem  idle.Elem[*keyedEntry] // in k.idle while refs == 0
}

var _ KeyedSemaphore = (*Keyed)(nil)

// NewLocalKeyed returns in-process semaphores per key, each with
// defaultLimit permits unless WithLimits or SetLimit says otherwise. It
// panics unless 0 < defaultLimit <= MaxLimit, or on a bad option. A keyed
// acquire costs one allocation, as a plain Local's.
func NewLocalKeyed(defaultLimit int64, opts ...Option) *Keyed {
	// A permit it grants is the key's Local's own permit, with no wrapper:
	// the Local's shared permitExt names the key's entry as its owner, so
	// Release gives the permit back to the Local and then unrefs the entry.
	cfg := buildConfig(opts)
	cfg.refuse("NewLocalKeyed", optsLocal&^(optName|optFairness)|optsKeyed)
	return newKeyed(defaultLimit, cfg, func(k Key, limit int64) LimitSemaphore {
		return newLocal(k.Label, limit, cfg)
	}, nil)
}

func newKeyed(def int64, cfg config, newSem func(Key, int64) LimitSemaphore, closeFn func() error) *Keyed {
	checkLimit("keyed semaphore default limit", def)
	limits := make(map[names.KeyID]int64, len(cfg.limits))
	for k, v := range cfg.limits { // validated by buildConfig
		limits[names.NewKeyID(k).Keep()] = v
	}
	k := &Keyed{def: def, newSem: newSem, closeFn: closeFn,
		entries: make(map[names.KeyID]*keyedEntry), limits: limits}
	k.idle.Init(cfg.maxIdle)
	return k
}

// Acquire blocks until a permit of key's semaphore is granted; see
// Semaphore.Acquire.
func (k *Keyed) Acquire(ctx context.Context, key string, opts ...AcquireOption) (*Permit, error) {
	return k.do(ctx, key, opts, false)
}

// TryAcquire takes a permit of key's semaphore if one is free at once; see
// Semaphore.TryAcquire.
func (k *Keyed) TryAcquire(ctx context.Context, key string, opts ...AcquireOption) (*Permit, error) {
	return k.do(ctx, key, opts, true)
}

func (k *Keyed) do(ctx context.Context, key string, opts []AcquireOption, try bool) (*Permit, error) {
	e, err := k.ref(key)
	if err != nil {
		return nil, err
	}
	var p *Permit
	if try {
		p, err = e.sem.TryAcquire(ctx, opts...)
	} else {
		p, err = e.sem.Acquire(ctx, opts...)
	}
	if err != nil {
		k.unref(e)
		return nil, err
	}
	return e.wrap(p), nil
}

// wrap returns the Keyed permit for p, a permit of e.sem: p itself when e
// owns it already (a Local of NewLocalKeyed), else a permit owned by e
// around p, which shares p's token, lease and Lost channel.
func (e *keyedEntry) wrap(p *Permit) *Permit {
	if p.owner == e {
		return p
	}
	return wrapPermit(e, p)
}

// release gives p back to e's semaphore, then unrefs e. p is either e's
// Local's own permit (no inner) or a wrapper around the backend's permit.
func (e *keyedEntry) release(ctx context.Context, p *Permit) error {
	var err error
	if p.inner == nil {
		err = e.local.release(ctx, p)
	} else {
		err = p.inner.Release(ctx)
	}
	e.k.unref(e)
	return err
}

func (k *Keyed) ref(key string) (*keyedEntry, error) {
	id := names.NewKeyID(key) // hashes a long key: outside the lock
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, ErrClosed
	}
	e := k.entries[id]
	if e == nil {
		limit, ok := k.limits[id]
		if !ok {
			limit = k.def
		}
		id = id.Keep()
		e = &keyedEntry{k: k, key: id, sem: k.newSem(Key{Label: id.Label(key), id: id}, limit)}
		if l, ok := e.sem.(*Local); ok {
			// No permit of l exists yet, and l is not shared: from now
			// on its permits are e's (see NewLocalKeyed).
			l.plain.owner = e
			e.local = l
			if f, ok := k.fair[id]; ok {
				l.setFairness(f)
			}
		}
		e.elem.V = e
		k.entries[id] = e
	}
	k.idle.Remove(&e.elem)
	e.refs++
	return e, nil
}

func (k *Keyed) unref(e *keyedEntry) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e.refs--
	if e.refs > 0 || k.entries[e.key] != e {
		return
	}
	var evicted []LimitSemaphore
	k.idle.Push(&e.elem)
	for old, ok := k.idle.Evict(); ok; old, ok = k.idle.Evict() {
		delete(k.entries, old.key)
		if k.closeFn == nil && old.local == nil {
			evicted = append(evicted, old.sem)
		}
	}
	if len(evicted) > 0 {
		// An evicted key's semaphore has no permit held nor waiter in
		// this process. Closing it may do I/O: not in the caller's call.
		k.closing.Add(1)
		go func() {
			defer k.closing.Done()
			for _, s := range evicted {
				closeSem(s)
			}
		}()
	}
}

func closeSem(s LimitSemaphore) {
	if c, ok := s.(io.Closer); ok {
		_ = c.Close()
	}
}

// SetLimit changes the limit of key's semaphore for every process sharing
// it (with the Redis backend the limit is stored in Redis and no longer
// expires). The override also stays in this process for when the key is
// created again. A limit not in [1, MaxLimit] is an ErrInvalidArgument
// error and changes nothing.
func (k *Keyed) SetLimit(ctx context.Context, key string, limit int64) error {
	if err := limitError(limit); err != nil {
		return err
	}
	e, err := k.ref(key)
	if err != nil {
		return err
	}
	defer k.unref(e)
	if err := e.sem.SetLimit(ctx, limit); err != nil {
		return err
	}
	k.mu.Lock()
	k.limits[e.key] = limit
	k.mu.Unlock()
	return nil
}

// SetFairness changes the Fairness of key's semaphore (see Fairness): with
// the Redis backend for every process (it is stored with the key's limit
// and no longer expires), in process for the life of the Keyed, as
// SetLimit's overrides are. A Fairness that Check refuses for the key's
// limit, or a backend whose semaphores have no Fairness, gives an
// ErrInvalidArgument error and changes nothing.
func (k *Keyed) SetFairness(ctx context.Context, key string, f Fairness) error {
	e, err := k.ref(key)
	if err != nil {
		return err
	}
	defer k.unref(e)
	fs, ok := e.sem.(interface {
		SetFairness(context.Context, Fairness) error
	})
	if !ok {
		return invalid("the semaphore of key %q (%T) has no Fairness", key, e.sem)
	}
	if err := fs.SetFairness(ctx, f); err != nil {
		return err
	}
	if e.local != nil {
		k.mu.Lock()
		if k.fair == nil {
			k.fair = make(map[names.KeyID]Fairness)
		}
		k.fair[e.key] = f
		k.mu.Unlock()
	}
	return nil
}

// Stats returns the state of key's semaphore.
func (k *Keyed) Stats(ctx context.Context, key string) (Stats, error) {
	e, err := k.ref(key)
	if err != nil {
		return Stats{}, err
	}
	defer k.unref(e)
	return e.sem.Stats(ctx)
}

// Len returns the number of per-key semaphores kept in this process, busy
// and idle.
func (k *Keyed) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.entries)
}

// Close fails later calls with ErrClosed and closes the backend: see the
// backend's Close for what happens to permits held and calls queued. It is
// safe to call more than once.
func (k *Keyed) Close() error {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil
	}
	k.closed = true
	// Collect the semaphores under the lock: releases still running change
	// k.entries (unref), and iterating it unlocked is a fatal map race.
	var sems []LimitSemaphore
	if k.closeFn == nil {
		sems = make([]LimitSemaphore, 0, len(k.entries))
		for _, e := range k.entries {
			sems = append(sems, e.sem)
		}
	}
	k.mu.Unlock()
	if k.closeFn != nil {
		return k.closeFn()
	}
	for _, s := range sems {
		closeSem(s)
	}
	k.closing.Wait()
	return nil
}
