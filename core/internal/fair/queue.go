package fair

import "slices"

// Queue is the queue of an in-process semaphore: one FIFO list until
// Fair is called, then a Sched for the rest of its life. Its items are
// embedded in the caller's requests, so it allocates nothing per request
// while it is FIFO. It is not safe for concurrent use.
type Queue[T any] struct {
	head, tail *Item[T] // FIFO
	n          int
	w          int64     // the weight queued
	s          *Sched[T] // non-nil once fair
}

// Fair switches q to fair queuing with the given reserves (per level, as
// in force: see Reserves) and flow weights. The items queued so far join
// the default flow at level 0, in order, and inUse permits count as held
// at level 0. Fair on a fair q only sets the reserves and weights.
func (q *Queue[T]) Fair(reserves []int64, weights map[string]int64, inUse int64) {
	if q.s != nil {
		q.s.Reserves, q.s.Weights = reserves, weights
		return
	}
	s := &Sched[T]{Reserves: reserves, Weights: weights}
	s.Held(0, inUse)
	w := q.w
	for it := q.head; it != nil; it = q.head {
		q.Remove(it) // from the FIFO list: q.s is not set yet
		s.Push(it, "", 0)
	}
	q.s, q.w = s, w
}

// IsFair reports whether Fair was called.
func (q *Queue[T]) IsFair() bool { return q.s != nil }

// Len returns the number of queued items.
func (q *Queue[T]) Len() int {
	if q.s != nil {
		return q.s.Len()
	}
	return q.n
}

// Weight returns the weight of the queued items.
func (q *Queue[T]) Weight() int64 { return q.w }

// Push queues it last in FIFO order, or, once fair, in flow at level.
func (q *Queue[T]) Push(it *Item[T], flow string, level int) {
	q.w += it.Weight
	if q.s != nil {
		q.s.Push(it, flow, level)
		return
	}
	pushBack(&q.head, &q.tail, it)
	q.n++
}

// Remove takes it, which must be queued, out of q.
func (q *Queue[T]) Remove(it *Item[T]) {
	q.w -= it.Weight
	if q.s != nil {
		q.s.Remove(it)
		return
	}
	unlink(&q.head, &q.tail, it)
	q.n--
}

// Next returns the item to grant next (see Sched.Next), or nil.
func (q *Queue[T]) Next() *Item[T] {
	if q.s != nil {
		return q.s.Next()
	}
	return q.head
}

// Grant removes it, the item Next returned, counting it as held at its
// level once fair.
func (q *Queue[T]) Grant(it *Item[T]) {
	if q.s != nil {
		q.w -= it.Weight
		q.s.Grant(it)
		return
	}
	q.Remove(it)
}

// Held counts weight permits granted at level with nobody queued.
func (q *Queue[T]) Held(level int, weight int64) {
	if q.s != nil {
		q.s.Held(level, weight)
	}
}

// Released counts weight permits of level as given back.
func (q *Queue[T]) Released(level int, weight int64) {
	if q.s != nil {
		q.s.Released(level, weight)
	}
}

// Items returns the queued items: in FIFO order, or once fair in Sched's.
func (q *Queue[T]) Items() []*Item[T] {
	if q.s != nil {
		return q.s.Items()
	}
	all := make([]*Item[T], 0, q.n)
	for it := q.head; it != nil; it = it.next {
		all = append(all, it)
	}
	return all
}

// Level returns the permits held and the items queued at level l, and the
// flows with waiters; zeros until fair.
func (q *Queue[T]) Level(l int) (use, waiting, backlogged int64) {
	if q.s == nil {
		return 0, 0, 0
	}
	use, waiting = q.s.Level(l)
	return use, waiting, q.s.Backlogged()
}

// Reserves returns reserves as in force under limit: honoured level by
// level until they add up to the limit.
func Reserves(reserves []int64, limit int64) []int64 {
	r := slices.Clone(reserves)
	for i := range r {
		r[i] = min(r[i], limit)
		limit -= r[i]
	}
	return r
}

// pushBack appends it to the list head … tail.
func pushBack[T any](head, tail **Item[T], it *Item[T]) {
	it.prev, it.next = *tail, nil
	if *tail == nil {
		*head = it
	} else {
		(*tail).next = it
	}
	*tail = it
}

// unlink takes it out of the list head … tail.
func unlink[T any](head, tail **Item[T], it *Item[T]) {
	if it.prev == nil {
		*head = it.next
	} else {
		it.prev.next = it.next
	}
	if it.next == nil {
		*tail = it.prev
	} else {
		it.next.prev = it.prev
	}
	it.prev, it.next = nil, nil
}
