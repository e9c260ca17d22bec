// Test hooks: the package's unexported state and steps, exported to its
// external tests (package redissem_test) only.

package redissem

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
)

// QueuedAt returns the Redis server time at which p's request joined the
// queue (zero if it never queued), for the multi-process FIFO test. p must
// be a permit of s, still held.
func QueuedAt(s *Semaphore, p *core.Permit) time.Time {
	h := heldHolder(s, p)
	if h == nil {
		panic("QueuedAt: p is not a permit that s holds")
	}
	if h.queueUS == 0 {
		return time.Time{}
	}
	return time.UnixMicro(h.queueUS)
}

// heldHolder returns the holder of p among the permits that s's backend
// tracks as held by s, or nil.
func heldHolder(s *Semaphore, p *core.Permit) *holder {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if t := s.b.sems[s]; t != nil {
		for h := range t.held {
			if h.p == p {
				return h
			}
		}
	}
	return nil
}

// ScriptSources returns the acquire and release scripts with their fast
// paths, or without them (the state read, then the general code), with
// every read of Redis TIME replaced by a read of the list clock (seconds,
// microseconds), so that a test can run both on the same state at the same
// instant. With the fast paths, the general code starts with an ECHO, so
// that a test can tell (INFO commandstats) which one answered.
func ScriptSources(fast bool, clock string) (acquire, release string) {
	src := func(fast, body string) string {
		if fast != "" {
			fast += "redis.call('ECHO', 'the general code runs')\n"
		}
		return inline(luaConst + luaHead + luaState + fast + luaLib + body)
	}
	acquire, release = src("", luaAcquire), src("", luaRelease)
	if fast {
		acquire, release = src(luaFastAcquire, luaAcquire), src(luaFastRelease, luaRelease)
	}
	r := strings.NewReplacer("redis.call('TIME')", "redis.call('LRANGE', '"+clock+"', 0, 1)")
	return r.Replace(acquire), r.Replace(release)
}

// ReleaseScript returns the release script's text, as core sends it.
func ReleaseScript() string { return scriptSource(luaFastRelease, luaRelease) }

// NoteReleases records n releases of id on s's backend, each with lease
// TTL ttl, as n successful Releases do.
func NoteReleases(s *Semaphore, id string, ttl time.Duration, n int) {
	for range n {
		s.b.noteReleased(s, id, ttl)
	}
}

// ReplayableReleases returns how many releases s's backend would run again
// if its subscription moved now.
func ReplayableReleases(s *Semaphore) int {
	n := 0
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.b.redo.live(time.Now(), func(*redo) { n++ })
	return n
}

// ListenShard subscribes s's channel as s's first wait does (on Cluster,
// its shard channel), without acquiring.
func ListenShard(ctx context.Context, s *Semaphore) error { return s.b.listen(ctx, s) }

// ResubscribeDuring makes s's backend remake its subscription now, as the
// follower does, and runs during once the new subscription (on Cluster)
// read the channels in use and before it subscribes them. It returns once
// the attempt ended. s must be subscribed.
func ResubscribeDuring(s *Semaphore, during func()) {
	b := s.b
	done := make(chan struct{})
	b.mu.Lock()
	b.hooks = &testHooks{shardSnapshot: during, resubscribed: func() { close(done) }}
	b.lastResub = time.Time{}
	b.mu.Unlock()
	b.resubscribe(nil)
	<-done
	b.mu.Lock()
	b.hooks = nil
	b.mu.Unlock()
}

// SweepShardsAt runs the sweep of idle shard channels of s's backend as
// the renewal loop does, as if the time were at.
func SweepShardsAt(s *Semaphore, at time.Time) {
	b := s.b
	b.subSem <- struct{}{}
	defer func() { <-b.subSem }()
	b.mu.Lock()
	drops := b.idleShards(at)
	b.mu.Unlock()
	b.unsubscribeShards(drops)
}

// ShardChannels returns the shard channels that s's backend holds
// subscribed and those it tracks as in use, each sorted.
func ShardChannels(s *Semaphore) (subscribed, tracked []string) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pubsub != nil {
		for ch := range b.pubsub.has {
			subscribed = append(subscribed, ch)
		}
	}
	for ch := range b.want {
		tracked = append(tracked, ch)
	}
	slices.Sort(subscribed)
	slices.Sort(tracked)
	return subscribed, tracked
}

// keyedRecord holds, for a keyed semaphore made by NewKeyedRecorded, the
// semaphore of each of its keys, by key.
type keyedRecord struct {
	mu   sync.Mutex
	sems map[string]*Semaphore
}

var keyedRecords sync.Map // *core.Keyed -> *keyedRecord

// NewKeyedRecorded is NewKeyed, and records the semaphore it makes for
// each key, for KeyedRedis.
func NewKeyedRecorded(client redis.UniversalClient, name string, defaultLimit int64, opts ...Option) *core.Keyed {
	rec := &keyedRecord{sems: make(map[string]*Semaphore)}
	k := newKeyed("NewKeyed", takesKeyed|takesFair|takesAck, client, name, defaultLimit, opts, func(s *Semaphore) core.LimitSemaphore {
		rec.mu.Lock()
		rec.sems[s.label] = s
		rec.mu.Unlock()
		return s
	})
	keyedRecords.Store(k, rec)
	return k
}

// KeyedRedis returns the semaphore of key in k, a NewKeyedRecorded, made
// if it is not in use (by a Stats call on key).
func KeyedRedis(k *core.Keyed, key string) *Semaphore {
	r, ok := keyedRecords.Load(k)
	if !ok {
		panic("KeyedRedis: k was not made by NewKeyedRecorded")
	}
	if _, err := k.Stats(context.Background(), key); err != nil {
		panic(err)
	}
	rec := r.(*keyedRecord)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	s := rec.sems[core.KeyLabel(key)]
	if s == nil {
		panic("KeyedRedis: no semaphore made for key " + key)
	}
	return s
}

// AddShardConcurrently subscribes s's shard channel by n calls at once on
// the current subscription of s's backend (as a first wait and catchUp
// may), and returns their errors.
func AddShardConcurrently(ctx context.Context, s *Semaphore, n int) []error {
	b := s.b
	b.mu.Lock()
	b.wantShard(s)
	sc := b.pubsub
	b.mu.Unlock()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = b.addShard(ctx, sc, s.notify, s.keys[0]) })
	}
	wg.Wait()
	return errs
}

// SameMaster reports whether the shard channels of a and b (of one
// Cluster) are on the same master.
func SameMaster(ctx context.Context, a, b *Semaphore) bool {
	cc := a.b.client.(*redis.ClusterClient)
	na, err1 := cc.MasterForKey(ctx, a.notify)
	nb, err2 := cc.MasterForKey(ctx, b.notify)
	return err1 == nil && err2 == nil && na.Options().Addr == nb.Options().Addr
}
