package redissem

import (
	"context"
	"sync"

	"github.com/distsem/distsem/core"
)

// close takes this process's waiters out of the Redis queue (each leave
// bounded by the operation timeout, all at once), stops the loop and the
// listener and waits for them, for the background clean-up, which stops
// retrying, and for every round trip still in flight (see Semaphore.Close). Queued Acquire calls return ErrClosed; held permits are marked
// lost and are no longer renewed: they return to the semaphore when
// released, or when their lease ends.
func (b *redisBackend) close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	ws := make([]*redisWaiter, 0, len(b.waiters))
	for _, w := range b.waiters {
		ws = append(ws, w)
		b.dropWaiter(w)
	}
	var lost []*holder
	for s, t := range b.sems {
		for p := range t.held {
			lost = append(lost, p)
		}
		delete(b.sems, s)
	}
	ps := b.pubsub
	if ps != nil {
		ps.abandon()
	}
	b.mu.Unlock()

	// Leave before the waiters return, so that "sem.Close();
	// client.Close()" leaves nothing queued. The release script also
	// passes on a permit that was granted meanwhile, and its tombstone
	// refuses an acquire still in flight.
	var leaves sync.WaitGroup
	for _, w := range ws {
		leaves.Add(1)
		go func() {
			defer leaves.Done()
			ctx, cancel := bound(context.Background(), b.cfg.fault.opTimeout)
			defer cancel()
			_, _ = w.s.runScript(ctx, scriptRelease, false, w.s.limit, w.id, b.tombTTL(w.ttl))
		}()
	}
	leaves.Wait()
	for _, w := range ws {
		w.ch <- grantNote{id: w.id, token: noteClosed}
	}
	close(b.stop)
	lose(lost, core.ErrClosed)
	var err error
	if ps != nil {
		err = ps.close()
	}
	b.closeUnstarted()
	b.wg.Wait()
	// Last, the round trips still in flight in goroutines (callScript):
	// their callers stopped waiting when their ctx ended, and each ends by
	// the client's own timeouts.
	b.trips.wait()
	return err
}
