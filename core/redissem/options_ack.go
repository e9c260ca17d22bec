package redissem

import (
	"errors"
	"fmt"
	"time"
)

// ackConfig is WithReplicaAck's: n = 0 when off.
type ackConfig struct {
	n       int
	timeout time.Duration
	given   bool
}

// ErrReplicaAck is in the error of an Acquire whose grant fewer replicas
// than WithReplicaAck asks for acknowledged in time; the error also wraps
// core.ErrUnavailable, and the failure policy applied to it. The permit has
// been given back.
var ErrReplicaAck = errors.New("redissem: too few replicas acknowledged the write in time")

// WithReplicaAck makes a grant, a release and a lease renewal count only
// once n replicas have them: each of their scripts is followed, in the same
// pipeline (one round trip, on the master of the semaphore's slot on
// Cluster), by WAIT n timeout. So a permit granted before a Sentinel or
// Cluster failover is on the replica that is promoted, unless more than
// n-1 replicas are lost at once. The default is off: Redis replicates
// asynchronously, and a failover can lose the grants of the last moments
// (docs/GUARANTEES.md).
//
// With the option on, a script publishes no grant note for another
// process: it hands them to the caller, which publishes them in a second
// round trip once WAIT confirmed the hand-off, so no waiter ever starts on
// a grant that the replicas may not have. When fewer than n replicas
// answer within timeout:
//   - a grant is given back (released in the background), and Acquire and
//     TryAcquire apply the failure policy to an error that wraps both
//     core.ErrUnavailable and ErrReplicaAck;
//   - a release counts as done (the master has it, and a replica that
//     missed it only holds the permit until its lease ends, which can
//     under-admit but never over-admit); the shortfall is reported through
//     WithOnError;
//   - a renewal does not extend the lease as this process counts it: a
//     permit whose renewals stay unacknowledged is lost (Permit.Lost) when
//     its last acknowledged lease ends;
//   - grants that the script handed to waiters are not announced until a
//     later WAIT confirms them: the process tries again in the background
//     for up to a third of the lease TTL, each try first checking that the
//     grant is still there (a try may reach a new primary that lacks it),
//     and each waiter's heartbeat also announces it; else the permit's
//     lease ends unused.
//
// Adopt, SetLeaseTTL and SetLimit are not followed by WAIT: a failover
// can lose them as it could without the option (ReleaseID is a release,
// and is).
//
// Every acknowledged call waits for the slowest of its n replicas, and a
// call whose replicas are behind waits up to timeout. A replica that has
// just finished a full sync (a new replica, or one that follows a newly
// promoted master) may acknowledge nothing until its first periodic ACK,
// up to a second later (measured on Redis 7.0): a timeout below that makes
// calls in that second fail. It panics unless n >=
// 1 and 0 < timeout < the operation timeout (WithOperationTimeout, 1s by
// default). NewLeased, NewLeasedKeyed, NewQuorum and NewAllOf do not take
// it: they panic naming it.
func WithReplicaAck(n int, timeout time.Duration) Option {
	return func(c *config) { c.ack = ackConfig{n: n, timeout: timeout, given: true} }
}

// checkAck panics, naming ctor and the option, if WithReplicaAck was given
// to a constructor that cannot honour it, or with a bad value (a timeout
// that the operation timeout would cut included).
func (c *config) checkAck(ctor string, t takes) {
	if !c.ack.given {
		return
	}
	if t&takesAck == 0 {
		panic(fmt.Sprintf("redissem: %s does not take WithReplicaAck: only New and NewKeyed wait for replicas", ctor))
	}
	if c.ack.n < 1 {
		panic(fmt.Sprintf("redissem: %s: WithReplicaAck: replicas must be at least 1, got %d", ctor, c.ack.n))
	}
	if c.ack.timeout <= 0 {
		panic(fmt.Sprintf("redissem: %s: WithReplicaAck: timeout must be positive, got %v", ctor, c.ack.timeout))
	}
	if c.ack.timeout >= c.fault.opTimeout {
		panic(fmt.Sprintf("redissem: %s: WithReplicaAck: timeout %v must be below the operation timeout %v", ctor, c.ack.timeout, c.fault.opTimeout))
	}
}
