// Package refsem is the bench's reference design, a minimal FIFO semaphore
// to compare distsem and bench/seedsem with: one script per decision (acquire, release)
// with a handful of nested Redis calls, a FIFO queue, and one targeted
// PUBLISH per hand-off to the waiter's process, which listens on one
// subscription. It has what a hand-off needs and nothing else: no lease
// renewal, tokens, idempotent retries, tombstones or failover handling, and
// a cancelled wait is only taken out of the queue best effort. It exists to
// separate what this machine costs a hand-off from what distsem's design
// adds; it is not a library.
package refsem

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed acquire.lua
	acquireSrc string
	//go:embed release.lua
	releaseSrc string

	acquireScript = redis.NewScript(acquireSrc)
	releaseScript = redis.NewScript(releaseSrc)
)

// queuedHook, if set (tests), runs when an Acquire has joined the queue.
var queuedHook func()

// Process is one process's subscription, shared by its semaphores.
type Process struct {
	c    redis.UniversalClient
	ps   *redis.PubSub
	ch   string
	seq  atomic.Int64
	mu   sync.Mutex
	wait map[string]chan struct{}
	done chan struct{}
}

// NewProcess subscribes to a channel of this process's own (name must be
// unique per process) and delivers grants until Close.
func NewProcess(ctx context.Context, c redis.UniversalClient, name string) (*Process, error) {
	p := &Process{c: c, ch: "refsem:" + name, wait: map[string]chan struct{}{}, done: make(chan struct{})}
	p.ps = c.Subscribe(ctx, p.ch)
	if _, err := p.ps.Receive(ctx); err != nil {
		p.ps.Close()
		return nil, err
	}
	go p.receive()
	return p, nil
}

func (p *Process) receive() {
	defer close(p.done)
	for {
		m, err := p.ps.ReceiveMessage(context.Background())
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		w := p.wait[m.Payload]
		delete(p.wait, m.Payload)
		p.mu.Unlock()
		if w != nil {
			close(w)
		}
	}
}

// Close stops the subscription.
func (p *Process) Close() error {
	err := p.ps.Close()
	<-p.done
	return err
}

// Sem is one semaphore of limit permits, leases of ttl.
type Sem struct {
	p     *Process
	keys  []string
	limit int64
	ttl   int64
}

// New returns semaphore name.
func (p *Process) New(name string, limit int64, ttl time.Duration) *Sem {
	tag := "refsem:{" + name + "}:"
	return &Sem{p: p, keys: []string{tag + "h", tag + "q"}, limit: limit, ttl: ttl.Milliseconds()}
}

// Acquire waits for a permit and returns its release.
func (s *Sem) Acquire(ctx context.Context) (func(context.Context) error, error) {
	id := s.p.ch + ":" + strconv.FormatInt(s.p.seq.Add(1), 36)
	w := make(chan struct{})
	s.p.mu.Lock()
	s.p.wait[id] = w
	s.p.mu.Unlock()
	n, err := acquireScript.Run(ctx, s.p.c, s.keys, s.limit, id, s.ttl, s.p.ch).Int()
	if err != nil {
		s.forget(id)
		return nil, err
	}
	if n == 0 {
		if queuedHook != nil {
			queuedHook()
		}
		select {
		case <-w:
		case <-ctx.Done():
			if s.forget(id) {
				// Best effort: out of the queue, and nothing was granted.
				s.p.c.LRem(context.WithoutCancel(ctx), s.keys[1], 1, s.p.ch+"|"+id)
				return nil, ctx.Err()
			}
			<-w // granted meanwhile: give it back
			s.release(context.WithoutCancel(ctx), id)
			return nil, ctx.Err()
		}
	} else {
		s.forget(id)
	}
	return func(ctx context.Context) error { return s.release(ctx, id) }, nil
}

// forget stops waiting for id's grant; false if it was delivered.
func (s *Sem) forget(id string) bool {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	_, ok := s.p.wait[id]
	delete(s.p.wait, id)
	return ok
}

func (s *Sem) release(ctx context.Context, id string) error {
	if err := releaseScript.Run(ctx, s.p.c, s.keys, s.limit, id, s.ttl).Err(); err != nil {
		return fmt.Errorf("refsem release: %w", err)
	}
	return nil
}
