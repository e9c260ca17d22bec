package redissem

import (
	"strings"
	"time"
)

// QueuedAt returns the Redis server time at which p's request joined the
// queue (zero if it never queued), for the multi-process FIFO test.
func QueuedAt(p *Permit) time.Time {
	if p.queueUS == 0 {
		return time.Time{}
	}
	return time.UnixMicro(p.queueUS)
}

// ScriptSources returns the acquire and release scripts with their fast
// paths, or without them (the general code alone), with every read of
// Redis TIME replaced by a read of the list clock (seconds, microseconds),
// so that a test can run both on the same state at the same instant.
func ScriptSources(fast bool, clock string) (acquire, release string) {
	acquire, release = scriptSource("", luaAcquire), scriptSource("", luaRelease)
	if fast {
		acquire, release = scriptSource(luaFastAcquire, luaAcquire), scriptSource(luaFastRelease, luaRelease)
	}
	r := strings.NewReplacer("redis.call('TIME')", "redis.call('LRANGE', '"+clock+"', 0, 1)")
	return r.Replace(acquire), r.Replace(release)
}

// ReleaseScript returns the release script's text, as core sends it.
func ReleaseScript() string { return scriptSource(luaFastRelease, luaRelease) }
