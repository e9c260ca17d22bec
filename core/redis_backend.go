package core

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisBackend is the per-process machinery shared by the Redis semaphores
// of one constructor: one pub/sub subscription on this process's own
// channel, and one loop that renews every lease and keeps every waiter
// alive. No goroutine runs until a permit is held or a waiter queues.
type redisBackend struct {
	client  redis.UniversalClient
	cfg     config
	channel string // where scripts publish this process's grants
	idBase  string // random per backend: ids are idBase + a counter
	idSeq   atomic.Uint64

	checkLive   string        // "1": grants skip waiters whose process stopped listening
	ctxHonoured bool          // the client bounds its I/O by each call's ctx
	brk         breaker       // consecutive failures, outage start
	subSem      chan struct{} // serialises subscribing (a lock that ctx can abandon)

	mu     sync.Mutex
	pubsub *redis.PubSub // nil until the first wait subscribes
	// waiters are the Acquire calls of this process that a grant note may
	// name, by waiter id; sems tracks, per semaphore, what the loop renews.
	waiters map[string]*redisWaiter
	sems    map[*Redis]*semTrack
	looping bool
	closed  bool

	wake chan struct{}
	stop chan struct{}
	wg   sync.WaitGroup
}

type semTrack struct {
	held     map[*Permit]time.Time   // permit -> local estimate of lease end
	waiting  map[string]*redisWaiter // queued in Redis (after the script said so)
	nextBeat time.Time
	reapAt   time.Time // earliest lease end seen, while waiting; zero if none
}

type redisWaiter struct {
	s   *Redis
	id  string
	ttl time.Duration
	ch  chan grantNote // buffered: the single note that ends the wait
}

func newRedisBackend(client redis.UniversalClient, cfg config) *redisBackend {
	if client == nil {
		panic("core: NewRedis expects a non-nil client")
	}
	if strings.ContainsAny(cfg.prefix, "{}") {
		panic(fmt.Sprintf("core: key prefix %q must not contain '{' or '}'", cfg.prefix))
	}
	if cfg.leaseTTL < minLeaseTTL {
		panic(fmt.Sprintf("core: lease TTL %v is below the minimum %v", cfg.leaseTTL, minLeaseTTL))
	}
	id := rand.Text()
	cfg.fault = cfg.fault.resolve(cfg.leaseTTL)
	// On Cluster, PUBLISH counts only the subscribers of the node that runs
	// the script, so it cannot tell that a process is gone.
	check := "1"
	if _, ok := client.(*redis.ClusterClient); ok {
		check = "0"
	}
	return &redisBackend{
		checkLive:   check,
		ctxHonoured: ctxHonoured(client),
		brk:         breaker{failures: cfg.fault.failures, cooldown: cfg.fault.cooldown},
		subSem:      make(chan struct{}, 1),
		client:      client,
		cfg:         cfg,
		idBase:      id[:16] + ".", // 80 random bits
		channel:     cfg.prefix + "notify:" + id,
		waiters:     make(map[string]*redisWaiter),
		sems:        make(map[*Redis]*semTrack),
		wake:        make(chan struct{}, 1),
		stop:        make(chan struct{}),
	}
}

// newID returns a holder or waiter id, unique across processes: a random
// base per backend and a counter (no system call per Acquire).
func (b *redisBackend) newID() string {
	return b.idBase + strconv.FormatUint(b.idSeq.Add(1), 36)
}

func (b *redisBackend) semaphore(name string, limit int64, owned bool) *Redis {
	if limit <= 0 {
		panic(fmt.Sprintf("core: NewRedis expects limit > 0, got %d", limit))
	}
	tag := b.cfg.prefix + "{" + name + "}:"
	s := &Redis{b: b, name: name, label: name, limit: limit, owned: owned,
		keys: []string{tag + "m", tag + "h", tag + "hi", tag + "q", tag + "qi", tag + "qe"}}
	if b.cfg.policy.mode == 2 {
		s.fallback = newLocal(name, b.cfg.policy.fallback, b.cfg)
	}
	if b.cfg.leased {
		s.leased = newLeased(s)
	}
	return s
}

// listen subscribes to this process's channel once, before the first wait,
// so that no grant can be published before anyone listens. It returns by
// ctx's end whatever Redis does: the subscription is made in the
// background, bounded by the operation timeout, and kept if it succeeds
// after the caller gave up.
func (b *redisBackend) listen(ctx context.Context) error {
	if ok, err := b.subscribed(); ok || err != nil {
		return err
	}
	select {
	case b.subSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if ok, err := b.subscribed(); ok || err != nil {
		<-b.subSem
		return err
	}
	if !b.brk.allow(time.Now()) {
		<-b.subSem
		return errBreakerOpen
	}
	done := make(chan error, 1)
	if !b.goBackground(func() { defer func() { <-b.subSem }(); done <- b.subscribe(ctx) }) {
		<-b.subSem
		return ErrClosed
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *redisBackend) subscribe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.fault.opTimeout)
	defer cancel()
	ps := b.client.Subscribe(ctx, b.channel)
	_, err := ps.ReceiveTimeout(ctx, b.cfg.fault.opTimeout)
	if err != nil {
		b.brk.record(outcomeFailed, time.Now())
		_ = ps.Close()
		return err
	}
	b.brk.record(outcomeOK, time.Now())
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		_ = ps.Close()
		return ErrClosed
	}
	b.pubsub = ps
	b.wg.Add(1)
	go b.receive(ps)
	return nil
}

// goBackground runs f in a goroutine that Close waits for, unless the
// backend is closed; it reports whether it did.
func (b *redisBackend) goBackground(f func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
	return true
}

func (b *redisBackend) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// subscribed reports whether the subscription is up, or ErrClosed.
func (b *redisBackend) subscribed() (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false, ErrClosed
	}
	return b.pubsub != nil, nil
}

// receive delivers the grants published on this process's channel. It
// reads the subscription directly (no forwarding goroutine: one fewer wake-up
// per hand-off). After a connection error go-redis resubscribes on the next
// read; grants published meanwhile are healed by an immediate heartbeat.
func (b *redisBackend) receive(ps *redis.PubSub) {
	defer b.wg.Done()
	ctx := context.Background()
	backoff := 10 * time.Millisecond
	for {
		msg, err := ps.ReceiveMessage(ctx)
		if err != nil {
			select {
			case <-b.stop:
				return
			default:
			}
			b.report("", unavailable("receive grants", b.channel, err))
			select {
			case <-b.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			b.resync()
			continue
		}
		backoff = 10 * time.Millisecond
		notes, err := parseNotes(msg.Payload)
		if err != nil {
			b.report("", err)
		}
		b.deliver(notes)
	}
}

// resync makes the loop run every heartbeat now, which reports the grants
// of this process's waiters that a lost message did not.
func (b *redisBackend) resync() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.sems {
		t.nextBeat = time.Time{}
	}
	b.poke()
}

// resyncSem makes the loop run s's heartbeat now if this process has
// waiters on s: a lost script reply may have carried their grants.
func (b *redisBackend) resyncSem(s *Redis) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.sems[s]; t != nil && len(t.waiting) > 0 {
		t.nextBeat = time.Time{}
		b.poke()
	}
}

// deliver hands each note to the waiter it names, if it still waits.
func (b *redisBackend) deliver(notes []grantNote) {
	if len(notes) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range notes {
		w := b.waiters[n.id]
		if w == nil {
			continue // already served, or gave up (its cleanup frees the grant)
		}
		delete(b.waiters, n.id)
		if t := b.sems[w.s]; t != nil {
			delete(t.waiting, n.id)
		}
		w.ch <- n
	}
}

// addWaiter makes w reachable by grant notes. It must run before the
// acquire script, because the grant may be published before the reply.
func (b *redisBackend) addWaiter(w *redisWaiter) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	b.waiters[w.id] = w
	return nil
}

// queued records that w is in s's Redis queue, so heartbeats keep it alive,
// and schedules a reap at the earliest lease end (ms, -1 if none).
func (b *redisBackend) queued(w *redisWaiter, nextMS int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.waiters[w.id] != w {
		return // closed, or already granted
	}
	t := b.track(w.s, w.ttl)
	t.waiting[w.id] = w
	if nextMS >= 0 {
		at := time.Now().Add(time.Duration(nextMS+1) * time.Millisecond)
		if t.reapAt.IsZero() || at.Before(t.reapAt) {
			t.reapAt = at
			b.poke()
		}
	}
}

// removeWaiter stops deliveries to w. It reports whether w was still
// waiting; if not, its note is in w.ch.
func (b *redisBackend) removeWaiter(w *redisWaiter) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.sems[w.s]; t != nil {
		delete(t.waiting, w.id)
	}
	if b.waiters[w.id] != w {
		return false
	}
	delete(b.waiters, w.id)
	return true
}

// hold tracks a granted permit for renewal. After Close it does not, and
// reports false.
func (b *redisBackend) hold(s *Redis, p *Permit) bool {
	ttl := time.Duration(p.ttl) * time.Millisecond
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.track(s, ttl).held[p] = time.Now().Add(ttl)
	return true
}

func (b *redisBackend) unhold(s *Redis, p *Permit) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.sems[s]; t != nil {
		delete(t.held, p)
	}
}

// track returns s's tracking state, creating it and starting the loop if
// needed. b.mu must be held, and b must not be closed.
func (b *redisBackend) track(s *Redis, ttl time.Duration) *semTrack {
	t := b.sems[s]
	if t == nil {
		t = &semTrack{held: make(map[*Permit]time.Time), waiting: make(map[string]*redisWaiter)}
		b.sems[s] = t
	}
	if beat := time.Now().Add(ttl / 3); t.nextBeat.IsZero() || beat.Before(t.nextBeat) {
		t.nextBeat = beat
		b.poke()
	}
	if !b.looping {
		b.looping = true
		b.wg.Add(1)
		go b.loop()
	}
	return t
}

func (b *redisBackend) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *redisBackend) report(name string, err error) {
	if b.cfg.onError != nil {
		b.cfg.onError(err)
	}
	b.cfg.observe(Event{Kind: EventBackendError, Name: name, Err: err})
}

// close takes this process's waiters out of the Redis queue (each leave
// bounded by the operation timeout, all at once), stops the loop and the
// listener and waits for them and for the background clean-up, which stops
// retrying. Queued Acquire calls return ErrClosed; held permits are marked
// lost and are no longer renewed: they return to the semaphore when
// released, or when their lease ends.
func (b *redisBackend) close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	ws := make([]*redisWaiter, 0, len(b.waiters))
	for id, w := range b.waiters {
		ws = append(ws, w)
		delete(b.waiters, id)
	}
	var lost []*Permit
	for s, t := range b.sems {
		for p := range t.held {
			close(p.lost)
			lost = append(lost, p)
		}
		delete(b.sems, s)
	}
	ps := b.pubsub
	b.mu.Unlock()

	// Leave before the waiters return, so that "sem.Close();
	// client.Close()" leaves nothing queued. The release script also
	// passes on a permit that was granted meanwhile, and its tombstone
	// refuses an acquire still in flight.
	var leaves sync.WaitGroup
	for _, w := range ws {
		leaves.Add(1)
		go func() {
			defer leaves.Done()
			ctx, cancel := context.WithTimeout(context.Background(), b.cfg.fault.opTimeout)
			defer cancel()
			_, _ = w.s.runScript(ctx, scriptRelease, false, w.s.limit, w.id, w.ttl.Milliseconds())
		}()
	}
	leaves.Wait()
	for _, w := range ws {
		w.ch <- grantNote{id: w.id, token: noteClosed}
	}
	close(b.stop)
	for _, p := range lost {
		b.cfg.observe(Event{Kind: EventLost, Name: "", Weight: p.weight, Err: ErrClosed})
	}
	var err error
	if ps != nil {
		err = ps.Close()
	}
	b.wg.Wait()
	return err
}
