package core

// WithLeasedShares makes a Redis semaphore (NewRedis, NewRedisKeyed) hand
// out permits from leased shares instead of deciding every grant in Redis.
// The default is off: every Acquire and Release is a Redis script, grants
// are strictly FIFO across processes and tokens fence.
//
// With it, each process holds a share of the limit, leased in Redis and
// renewed with its heartbeat; the shares never sum above the limit. Within
// the process a FIFO in-process semaphore of the share's size grants and
// hands off permits without a round trip. Processes report their demand
// (holders + waiters) with each heartbeat, and the shares are rebalanced
// max-min fairly: a process grows into free capacity and shrinks as its
// own permits are released (a held permit is never revoked). See the
// package documentation, "Leased shares", for what changes: FIFO holds only
// within a process, tokens do not fence across processes, and every
// process of one semaphore must use the same mode. Choose it for few
// semaphores with short holds at high rates; not for many semaphores of a
// small limit (NewRedisKeyed with limit 1 per key, say), where each
// semaphore's few permits must rotate between processes through Redis at
// the heartbeat's pace: 29–256 grants/s over 10 to 10,000 semaphores of
// limit 1 (bench/RESULTS.md), against 11,000–14,600 in the default
// mode. Only NewRedis and NewRedisKeyed take it.
//
// All permits of a process share its share's lease, so a per-call
// WithLeaseTTL is refused with an ErrInvalidArgument error, and permits
// have no ID that another process could adopt or release.
func WithLeasedShares() Option {
	return func(c *config) { c.leased = true; c.given |= optLeased }
}
