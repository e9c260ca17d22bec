package core

import "time"

// QueuedAt returns the Redis server time at which p's request joined the
// queue (zero if it never queued), for the multi-process FIFO test.
func QueuedAt(p *Permit) time.Time {
	if p.queueUS == 0 {
		return time.Time{}
	}
	return time.UnixMicro(p.queueUS)
}
