package core

// localWaiter is a queued Acquire of a Local. The permit it is granted is
// part of it, so a grant after a wait allocates nothing more.
type localWaiter struct {
	next, prev *localWaiter // in Local.waiters
	n          int64
	ready      chan struct{} // closed when granted or failed
	err        error         // set before ready is closed when the waiter failed
	p          Permit        // the grant; set before ready is closed
}

// waitQueue is an intrusive FIFO list of waiters (no allocation per node).
// It is guarded by Local.mu.
type waitQueue struct {
	head, tail *localWaiter
	n          int
}

func (q *waitQueue) push(w *localWaiter) {
	w.prev, w.next = q.tail, nil
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
	q.n++
}

// remove takes w, which must be queued, out of q.
func (q *waitQueue) remove(w *localWaiter) {
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	q.n--
}

// failHeavier fails and unqueues every waiter heavier than limit: it can
// never fit. s.mu must be held.
func (s *Local) failHeavier(limit int64) {
	for w := s.waiters.head; w != nil; {
		next := w.next
		if w.n > limit {
			w.err = invalid("weight %d exceeds the limit %d of %q", w.n, limit, s.name)
			s.waiters.remove(w)
			close(w.ready)
		}
		w = next
	}
}
