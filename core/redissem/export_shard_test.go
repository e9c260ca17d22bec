package redissem

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ListenShard subscribes s's channel as s's first wait does (on Cluster,
// its shard channel), without acquiring.
func ListenShard(ctx context.Context, s *Redis) error { return s.b.listen(ctx, s) }

// ResubscribeDuring makes s's backend remake its subscription now, as the
// follower does, and runs during once the new subscription (on Cluster)
// read the channels in use and before it subscribes them. It returns once
// the attempt ended. s must be subscribed.
func ResubscribeDuring(s *Redis, during func()) {
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
func SweepShardsAt(s *Redis, at time.Time) {
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
func ShardChannels(s *Redis) (subscribed, tracked []string) {
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

// KeyedRedis returns the semaphore of key in k, a NewRedisKeyed (made if
// it is not in use), and keeps it in use.
func KeyedRedis(k *Keyed, key string) *Redis {
	e, err := k.ref(key)
	if err != nil {
		panic(err)
	}
	return e.sem.(*Redis)
}

// AddShardConcurrently subscribes s's shard channel by n calls at once on
// the current subscription of s's backend (as a first wait and catchUp
// may), and returns their errors.
func AddShardConcurrently(ctx context.Context, s *Redis, n int) []error {
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
func SameMaster(ctx context.Context, a, b *Redis) bool {
	cc := a.b.client.(*redis.ClusterClient)
	na, err1 := cc.MasterForKey(ctx, a.notify)
	nb, err2 := cc.MasterForKey(ctx, b.notify)
	return err1 == nil && err2 == nil && na.Options().Addr == nb.Options().Addr
}
