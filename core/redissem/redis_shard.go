package redissem

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// On Redis Cluster, PUBLISH reaches every node but counts only the
// subscribers of the node that ran it, so a grant could not tell that the
// waiter's process is gone. So each semaphore has its
// own channel for this process, "<prefix>notify:{name}:<process>", a shard
// channel in the semaphore's slot. A script may use it, as it is in the
// script's slot: grant() counts its subscribers on the master (PUBSUB
// SHARDNUMSUB) before it grants, and the grant goes out by SPUBLISH. The
// process subscribes on the slot's master (checked: a replica would take
// the subscription, and get the messages, without being counted), with one
// connection per master (not per semaphore) and an SSUBSCRIBE for each
// semaphore in use (redis_shard_sweep.go drops the idle ones); the follower
// (redis_follow.go) remakes the whole set after a connection error, a
// failover or a slot move.

// sub is this process's subscription: one PubSub on its channel, or on
// Cluster one per master, with has giving the connection of each confirmed
// shard channel and pending the channels awaiting confirmation. Its maps
// are guarded by b.mu.
type sub struct {
	ps      []*redis.PubSub
	byAddr  map[string]*redis.PubSub // Cluster: master address -> its PubSub
	has     map[string]*redis.PubSub
	pending map[string][]chan error // each buffered; none once confirmed
	moving  bool                    // a master gave up the slot of a channel in use
	// snap: on Cluster, until start, the channels in use (b.want) as
	// tryShardSub read them, before it subscribed them.
	snap map[string]shardWant
}

// errReplaced: the subscription was remade while a shard channel was being
// added to it; the caller adds it to the new one.
var errReplaced = errors.New("subscription replaced")

// errMigrating: a shard channel's slot is being migrated (ASK, TRYAGAIN),
// so it cannot be subscribed now. The wait goes on without it: a grant
// meanwhile skips the waiter, which queues again when its heartbeat finds
// it gone (and the subscription is remade); the next wait subscribes it.
var errMigrating = errors.New("slot migrating")

// clusterReply is the kind of a Cluster error reply (clusterReplyOf).
type clusterReply int

const (
	replyOther     clusterReply = iota // not one of the kinds below, or not a Redis reply
	replyMigrating                     // ASK, TRYAGAIN: the slot is moving off this master, which still serves it
	replyMoved                         // MOVED: another node serves the slot (after go-redis's own redirects)
	replyDown                          // CLUSTERDOWN: the cluster is briefly down
)

// clusterReplyOf classifies err. The three kinds but replyOther are
// resolved by a retry; replyMigrating also comes from the slot's master.
func clusterReplyOf(err error) clusterReply {
	var re redis.Error
	if !errors.As(err, &re) {
		return replyOther
	}
	switch msg := re.Error(); {
	case strings.HasPrefix(msg, "ASK "), strings.HasPrefix(msg, "TRYAGAIN"):
		return replyMigrating
	case strings.HasPrefix(msg, "MOVED "):
		return replyMoved
	case strings.HasPrefix(msg, "CLUSTERDOWN"):
		return replyDown
	}
	return replyOther
}

// shardWant is a shard channel in use: its semaphore, and when a wait last
// needed it.
type shardWant struct {
	s    *Semaphore
	last time.Time
}

// start makes sc the subscription in use: it tracks again the channels
// that a sweep forgot while sc was made (retrack), and runs one receive
// loop per connection of sc. On Cluster it returns the semaphores whose
// channels came into use after tryShardSub read them: their first wait
// subscribed them on the old subscription meanwhile, so sc lacks them, and
// the caller adds them (catchUp). b.mu must be held.
func (sc *sub) start(b *redisBackend) (late []*Semaphore) {
	for ch, w := range b.want { // empty unless on Cluster
		if _, read := sc.snap[ch]; !read && sc.has[ch] == nil {
			late = append(late, w.s)
		}
	}
	b.retrack(sc)
	for _, ps := range sc.ps {
		b.wg.Add(1)
		go b.receive(sc, ps)
	}
	return late
}

// catchUp adds to sc, within ctx, the shard channels of late (see start),
// while sc is the subscription in use. A grant published before its
// channel is added skips its waiter, which the resync after a new
// subscription heals.
func (b *redisBackend) catchUp(ctx context.Context, sc *sub, late []*Semaphore) {
	for _, s := range late {
		if ctx.Err() != nil || !b.current(sc) {
			return
		}
		_ = b.addShard(ctx, sc, s.notify, s.keys[0])
	}
}

// abandon wakes the addShard calls waiting on sc, which was replaced or
// closed. b.mu must be held.
func (sc *sub) abandon() {
	sc.wake(errReplaced)
}

// wake ends the addShard calls waiting on sc with err. b.mu must be held.
func (sc *sub) wake(err error) {
	for ch, waits := range sc.pending {
		delete(sc.pending, ch)
		for _, ready := range waits {
			ready <- err
		}
	}
}

func (sc *sub) close() error {
	var first error
	for _, ps := range sc.ps {
		if err := ps.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// wantShard marks s's shard channel as in use now. b.mu must be held.
func (b *redisBackend) wantShard(s *Semaphore) {
	if w := b.want[s.notify]; w != nil {
		w.s, w.last = s, time.Now() // s: a keyed entry may be made anew
		return
	}
	b.want[s.notify] = &shardWant{s: s, last: time.Now()}
	b.poke() // the loop schedules its sweep (redis_shard_sweep.go)
}

// newShardSub subscribes every shard channel in use, each on the master of
// its slot (one connection per master), and waits for Redis to confirm
// them all. It tries again every 50 ms within ctx: after a slot move or a
// failover, the slot map reloads in the background.
func (b *redisBackend) newShardSub(ctx context.Context) (*sub, error) {
	for {
		sc, err := b.tryShardSub(ctx)
		if err == nil {
			return sc, nil
		}
		if strings.Contains(err.Error(), "NOPERM") {
			return nil, err // a missing right: no retry helps
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-b.stop:
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

func (b *redisBackend) tryShardSub(ctx context.Context) (*sub, error) {
	cc := b.client.(*redis.ClusterClient)
	b.mu.Lock()
	chans := make([]string, 0, len(b.want))
	snap := make(map[string]shardWant, len(b.want))
	for ch, w := range b.want {
		chans = append(chans, ch)
		snap[ch] = *w
	}
	b.mu.Unlock()
	if h := b.hooks; h != nil && h.shardSnapshot != nil {
		h.shardSnapshot()
	}
	sc := &sub{byAddr: make(map[string]*redis.PubSub), has: make(map[string]*redis.PubSub), pending: make(map[string][]chan error), snap: snap}
	nodes := make(map[string]*redis.Client)
	groups := make(map[string][]string)
	for _, ch := range chans {
		n, err := cc.MasterForKey(ctx, ch)
		if err != nil {
			b.reloadSlots()
			return nil, err
		}
		a := n.Options().Addr
		nodes[a] = n
		groups[a] = append(groups[a], ch)
	}
	for a, chs := range groups {
		ps, got, err := b.shardPubSub(ctx, nodes[a], chs)
		if err == nil && len(got) == 0 {
			continue // every slot in migration
		}
		if err == nil {
			err = isMaster(ctx, nodes[a], snap[got[0]].s.keys[0]) // a key of its slot
			if err != nil {
				_ = ps.Close()
			}
		}
		if err != nil {
			_ = sc.close()
			b.reloadSlots()
			return nil, fmt.Errorf("subscribe on %s: %w", a, err)
		}
		sc.ps = append(sc.ps, ps)
		sc.byAddr[a] = ps
		for _, ch := range got {
			sc.has[ch] = ps
		}
	}
	return sc, nil
}

// shardPubSub subscribes chans on node, one SSUBSCRIBE each (channels of
// different slots may not share one), reads the replies within ctx, and
// returns the channels confirmed: all but those whose slot is in migration.
// Nobody else reads the connection yet. With none confirmed, it closes ps.
func (b *redisBackend) shardPubSub(ctx context.Context, node *redis.Client, chans []string) (*redis.PubSub, []string, error) {
	ps := node.SSubscribe(ctx)
	fail := func(err error) (*redis.PubSub, []string, error) {
		_ = ps.Close()
		return nil, nil, err
	}
	for _, ch := range chans {
		if err := ps.SSubscribe(ctx, ch); err != nil {
			return fail(err)
		}
	}
	var got []string
	for range chans {
		wait := b.cfg.fault.opTimeout
		if d, ok := ctx.Deadline(); ok {
			wait = time.Until(d)
		}
		m, err := ps.ReceiveTimeout(ctx, max(wait, time.Millisecond))
		if clusterReplyOf(err) == replyMigrating {
			continue
		}
		if err != nil {
			return fail(err)
		}
		c, ok := m.(*redis.Subscription)
		if !ok || c.Kind != "ssubscribe" {
			return fail(fmt.Errorf("unexpected reply %v to SSUBSCRIBE", m))
		}
		got = append(got, c.Channel)
	}
	if len(got) == 0 {
		_ = ps.Close()
		return nil, nil, nil
	}
	return ps, got, nil
}

// isMaster checks that node is (still) the master of key's slot: a replica
// accepts SSUBSCRIBE for its master's slots (a stale slot map after a
// failover would put the subscription there), but SPUBLISH on the master
// does not count it. A script that declares key is refused (MOVED) by a
// replica, with only the rights of the minimum ACL. Once the check passes,
// a demotion ends the subscription (SUNSUBSCRIBE), which the follower sees.
// ASK or TRYAGAIN (key missing from a slot in migration) come from the
// master too.
func isMaster(ctx context.Context, node *redis.Client, key string) error {
	if err := evalSHA(ctx, node, scriptPing, scriptCmd(scriptPing, []string{key})).Err(); err != nil && clusterReplyOf(err) != replyMigrating {
		return err
	}
	return nil
}
