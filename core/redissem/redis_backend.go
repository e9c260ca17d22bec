package redissem

import (
	"crypto/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distsem/distsem/core"

	"github.com/redis/go-redis/v9"
)

// redisBackend is the per-process machinery shared by the Redis semaphores
// of one constructor: one pub/sub subscription on this process's own
// channel (on Cluster one per master, redis_shard.go), and one loop that
// renews every lease and keeps every waiter alive. No goroutine runs until
// a permit is held or a waiter queues.
type redisBackend struct {
	client  redis.UniversalClient
	cfg     config
	channel string // where scripts publish this process's grants (standalone, Sentinel)
	sharded bool   // Cluster: a shard channel per semaphore (redis_shard.go)
	idBase  string // random per backend: ids are idBase + a counter
	idSeq   atomic.Uint64

	ctxHonoured bool           // the client bounds its I/O by each call's ctx
	brk         breaker        // consecutive failures, outage start
	dials       *dialWatch     // the client's latest dial: names a refused one
	migration   migrationWatch // how long a slot migration's replies have lasted
	subSem      chan struct{}  // serialises subscribing (a lock that ctx can abandon)
	rightsOK    atomic.Bool    // the user's rights were checked (redis_rights.go)
	ttlArgs     ttlArgs        // the default lease's arguments, boxed once (redis_run.go)
	hooks       *testHooks     // nil but in tests (redis_follow.go)
	regate      gate           // shut while holders are re-asserted after a switch (redis_reassert.go)

	mu     sync.Mutex
	pubsub *sub // nil until the first wait subscribes
	// want: on Cluster, the shard channels to subscribe, by channel
	// (redis_shard.go). resubbing, lastResub and lastReload bound how often
	// the subscription moves and the slot map reloads (redis_follow.go).
	want       map[string]*shardWant
	lastSweep  time.Time
	resubbing  bool
	lastResub  time.Time
	lastReload time.Time
	lastReplay time.Time
	redo       redoRing // ids to release again (redis_redo.go)
	// waiters is the one index of the Acquire calls of this process that a
	// grant note may name, by waiter id; those queued in Redis are also
	// linked, through their own fields, in their semaphore's semTrack
	// (waitList), for the heartbeat. dropWaiter takes a waiter out of both.
	// sems tracks, per semaphore, what the loop renews.
	waiters map[string]*redisWaiter
	sems    map[*Semaphore]*semTrack
	looping bool
	// loopNext is when the loop wakes next, as its last beat set it: a
	// semaphore tracked anew pokes the loop only if its heartbeat is due
	// before then.
	loopNext time.Time
	closed   bool

	wake    chan struct{}
	stop    chan struct{}
	beatSem chan struct{} // bounds the heartbeats in flight
	wg      sync.WaitGroup
	trips   inflight  // the round trips in goroutines (redis_run.go)
	gives   giveBatch // idle give-backs of leased semaphores (leased_batch.go)
	// unstarted holds the leased loops begun whose goroutines have not
	// started (leased_start.go); nil once closed.
	unstarted map[*leased]struct{}
}

type semTrack struct {
	held     map[*holder]time.Time // permit -> local estimate of lease end
	waiting  waitList              // queued in Redis (after the script said so)
	nextBeat time.Time
	reapAt   time.Time // earliest lease end seen, while waiting; zero if none
	beating  bool      // a heartbeat is in flight
}

// idle reports whether t renews nothing: no permit held, no waiter. The
// loop keeps it for reuse until its next beat is due (beat).
func (t *semTrack) idle() bool { return len(t.held) == 0 && t.waiting.n == 0 }

type redisWaiter struct {
	s   *Semaphore
	id  string
	ttl time.Duration
	ch  chan grantNote // buffered: the single note that ends the wait

	// Guarded by b.mu: the list of the semaphore's queued waiters that
	// links this one (nil if none), and its neighbours in it.
	in         *waitList
	prev, next *redisWaiter
}

// waitList is a semaphore's queued waiters, linked through their fields,
// so that a heartbeat lists them without scanning the other semaphores'
// and a waiter leaves it in constant time. Guarded by b.mu.
type waitList struct {
	head *redisWaiter
	n    int
}

func (l *waitList) push(w *redisWaiter) {
	w.in, w.prev, w.next = l, nil, l.head
	if l.head != nil {
		l.head.prev = w
	}
	l.head = w
	l.n++
}

func (l *waitList) unlink(w *redisWaiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	}
	w.in, w.prev, w.next = nil, nil, nil
	l.n--
}

// dropWaiter takes w out of the index (b.waiters, and its semaphore's
// waitList if queued), and reports whether it was there: if not, its note
// was delivered. b.mu must be held.
func (b *redisBackend) dropWaiter(w *redisWaiter) bool {
	if w.in != nil {
		w.in.unlink(w)
	}
	if b.waiters[w.id] != w {
		return false
	}
	delete(b.waiters, w.id)
	return true
}

// newRedisBackend returns the machinery of ctor's semaphores on client,
// configured by cfg (validated by buildConfig). It panics on a nil client.
func newRedisBackend(ctor string, client redis.UniversalClient, cfg config) *redisBackend {
	if client == nil {
		panic("redissem: " + ctor + " expects a non-nil client")
	}
	id := rand.Text()
	// On Cluster, PUBLISH counts only the subscribers of the node that runs
	// the script, so each semaphore gets its own shard channel, whose
	// subscribers its slot's master counts (redis_shard.go).
	_, sharded := client.(*redis.ClusterClient)
	b := &redisBackend{
		sharded:     sharded,
		want:        make(map[string]*shardWant),
		ctxHonoured: ctxHonoured(client),
		brk:         breaker{failures: cfg.fault.failures, cooldown: cfg.fault.cooldown},
		dials:       watchDials(client),
		subSem:      make(chan struct{}, 1),
		client:      client,
		cfg:         cfg,
		idBase:      id[:16] + ".", // 80 random bits
		channel:     cfg.prefix + "notify:" + id,
		waiters:     make(map[string]*redisWaiter),
		sems:        make(map[*Semaphore]*semTrack),
		wake:        make(chan struct{}, 1),
		beatSem:     make(chan struct{}, beatParallel),
		stop:        make(chan struct{}),
	}
	b.ttlArgs = ttlArgs{lease: cfg.leaseTTL, ms: cfg.leaseTTL.Milliseconds(), tomb: b.tombTTL(cfg.leaseTTL)}
	return b
}

// newID returns a holder or waiter id, unique across processes: a random
// base per backend and a counter (no system call per Acquire), and "_n"
// after it for one whose Acquire stores a note (NOTED, lua/inline.lua:
// only such ids have a note field to delete).
func (b *redisBackend) newID(noted bool) string {
	var buf [32]byte // one allocation: the string
	id := strconv.AppendUint(append(buf[:0], b.idBase...), b.idSeq.Add(1), 36)
	if noted {
		id = append(id, "_n"...)
	}
	return string(id)
}

// semaphore returns the semaphore name of limit permits (both checked by
// the constructor) on b; owned: its Close closes b.
func (b *redisBackend) semaphore(name string, limit int64, owned bool) *Semaphore {
	tag := b.cfg.prefix + "{" + name + "}:"
	s := &Semaphore{b: b, name: name, label: name, limit: limit, owned: owned,
		keys: []string{tag + "m", tag + "h", tag + "q", tag + "p", tag + "f", tag + "r"}, fairEnc: encodeFairness(b.cfg.fair)}
	s.notify = b.channel
	if b.sharded {
		// The channel's hash tag is the semaphore's: the same slot.
		s.notify = b.cfg.prefix + "notify:{" + name + "}:" + strings.TrimPrefix(b.channel, b.cfg.prefix+"notify:")
	}
	s.args = newEvalArgs(s.keys, s.notify)
	if b.cfg.ack.n > 0 {
		// The scripts hand the notes of other processes to the caller.
		s.args = newEvalArgs(append(s.keys[:len(s.keys):len(s.keys)], tag+keyAckSuffix), s.notify)
	}
	s.fallback = newFallback(name, b.cfg)
	return s
}

// deliver hands each note to the waiter it names, if it still waits. A
// grant to an orphan (a waiter whose clean-up gave up) is released in the
// background. Notes come from pub/sub and from every script's reply, the
// heartbeat's catch-up included.
func (b *redisBackend) deliver(notes []grantNote) {
	notes = leasedPushes(notes)
	if len(notes) == 0 {
		return
	}
	var free []redo
	b.mu.Lock()
	for _, n := range notes {
		w := b.waiters[n.id]
		if w == nil {
			// Already served, or gave up: its clean-up frees the grant,
			// unless that clean-up gave up too (an orphan).
			if o, ok := b.redo.adoptOrphan(n); ok && !b.closed {
				free = append(free, o)
			}
			continue
		}
		b.dropWaiter(w)
		w.ch <- n
	}
	b.mu.Unlock()
	for _, o := range free {
		b.releaseOrphan(o)
	}
}

// addWaiter makes w reachable by grant notes. It must run before the
// acquire script, because the grant may be published before the reply.
func (b *redisBackend) addWaiter(w *redisWaiter) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return core.ErrClosed
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
	if w.in == nil {
		t.waiting.push(w)
	}
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
	return b.dropWaiter(w)
}

// hold tracks a granted permit for renewal. After Close it does not, and
// reports false.
//
// The local estimate of the lease's end starts at the grant's server time
// (converted to the local clock), not at receipt: a grant that arrived late
// (a heartbeat's catch-up after a lost notification) has less lease left,
// and if a third of it or more is gone it is renewed at once.
func (b *redisBackend) hold(s *Semaphore, p *holder) bool {
	ttl := time.Duration(p.ttl) * time.Millisecond
	now := time.Now()
	start := now
	if at, ok := s.clock.local(p.grantUS); ok && at.Before(now) {
		start = at
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	t := b.track(s, ttl)
	t.held[p] = start.Add(ttl)
	if now.Sub(start) >= ttl/3 {
		t.nextBeat = time.Time{}
		b.poke()
	}
	return true
}

func (b *redisBackend) unhold(s *Semaphore, p *holder) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.sems[s]; t != nil {
		delete(t.held, p)
	}
}

// track returns s's tracking state, creating it and starting the loop if
// needed. b.mu must be held, and b must not be closed.
func (b *redisBackend) track(s *Semaphore, ttl time.Duration) *semTrack {
	t := b.sems[s]
	if t == nil {
		t = &semTrack{held: make(map[*holder]time.Time)}
		b.sems[s] = t
	}
	// An idle entry renews nothing, so its next heartbeat is the new
	// permit's or waiter's.
	if beat := time.Now().Add(ttl / 3); t.idle() || t.nextBeat.IsZero() || beat.Before(t.nextBeat) {
		t.nextBeat = beat
		if beat.Before(b.loopNext) {
			b.poke()
		}
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

// report tells WithOnError and the observer of a backend failure; a slot
// migration's replies only once it outlasts migrateBudget (migrationWatch).
func (b *redisBackend) report(name string, err error) {
	if isMigration(err) {
		if err = b.migration.outlasted(err, time.Now()); err == nil {
			return
		}
	}
	if b.cfg.onError != nil {
		b.cfg.onError(err)
	}
	b.cfg.observe(core.Event{Kind: core.EventBackendError, Name: name, Err: err})
}
