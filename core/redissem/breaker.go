package redissem

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// errBreakerOpen is the cause of a call refused by the open breaker.
var errBreakerOpen = errors.New("circuit breaker open after consecutive backend failures")

// breaker counts consecutive backend failures of one backend. After
// `failures` of them it refuses calls for `cooldown`, then lets one probe
// through. It also remembers when the current outage began, which the
// renewal loop uses to give queued waiters the failure policy.
//
// It is hand-written rather than github.com/sony/gobreaker: the renewal
// loop must keep renewing while the breaker is open (a renewal is a probe
// that is never refused), and the waiter policy needs the start of the
// outage, which gobreaker does not expose; both take a few lines here.
type breaker struct {
	failures int // <0: disabled
	cooldown time.Duration

	mu        sync.Mutex
	fails     int       // consecutive failures
	openUntil time.Time // refuse calls until then
	probing   bool      // a probe is in flight
	downSince time.Time // first failure of the current outage; zero if up
}

// allow reports whether a call may go to Redis.
func (b *breaker) allow(now time.Time) bool {
	if b.failures < 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fails < b.failures {
		return true
	}
	if now.Before(b.openUntil) || b.probing {
		return false
	}
	b.probing = true
	return true
}

// outcome classifies the result of a round trip made under parent.
type outcome int

const (
	outcomeOK      outcome = iota // Redis answered (also with an error reply)
	outcomeFailed                 // Redis did not answer in time, or refused
	outcomeNeutral                // the caller gave up first: says nothing
)

// A call that the caller's deadline ended counts as a failure if Redis had
// been silent for at least a quarter of the operation timeout: a caller
// whose deadline is about the operation timeout would otherwise never open
// the breaker. A cancellation, or a deadline shorter than that, says
// nothing about Redis.
func classify(parent context.Context, err error, waited, opTimeout time.Duration) outcome {
	var re redis.Error
	switch {
	case err == nil, errors.As(err, &re):
		return outcomeOK
	case parent.Err() == nil:
		return outcomeFailed
	case errors.Is(parent.Err(), context.DeadlineExceeded) && waited >= opTimeout/4:
		return outcomeFailed
	}
	return outcomeNeutral
}

func (b *breaker) record(o outcome, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
	switch o {
	case outcomeOK:
		b.fails = 0
		b.downSince = time.Time{}
	case outcomeFailed:
		if b.fails == 0 {
			b.downSince = now
		}
		b.fails++
		if b.failures > 0 && b.fails >= b.failures {
			b.openUntil = now.Add(b.cooldown)
		}
	}
}

// down returns when the current outage began, or the zero time.
func (b *breaker) down() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.downSince
}
