package core

import (
	"context"
	"slices"
	"time"
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
