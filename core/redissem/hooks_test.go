package redissem

import (
	"strings"
	"time"

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
