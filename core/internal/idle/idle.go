// Package idle keeps the idle entries of a keyed semaphore: a list, most
// recently idle first, bounded in length, that evicts the least recently
// idle entries beyond the bound. It is intrusive: an entry embeds its Elem,
// so keeping an entry idle allocates nothing. It is not safe for
// concurrent use.
package idle

// Elem is an entry's place in a List; V is the entry.
type Elem[T any] struct {
	V          T
	prev, next *Elem[T]
}

// List is a bounded list of idle entries. Its zero value is not ready:
// call Init.
type List[T any] struct {
	root Elem[T] // sentinel of the ring
	n    int
	max  int
}

// Init empties l and sets its bound.
func (l *List[T]) Init(max int) {
	l.root.prev, l.root.next = &l.root, &l.root
	l.n, l.max = 0, max
}

// Len returns the number of idle entries.
func (l *List[T]) Len() int { return l.n }

// Remove takes e out of l, if it is in it.
func (l *List[T]) Remove(e *Elem[T]) {
	if e.next == nil {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	l.n--
}

// Push makes e the most recently idle entry.
func (l *List[T]) Push(e *Elem[T]) {
	e.prev, e.next = &l.root, l.root.next
	e.next.prev, l.root.next = e, e
	l.n++
}

// Evict removes and returns the least recently idle entry while l holds
// more than its bound; else it returns false.
func (l *List[T]) Evict() (T, bool) {
	if l.n <= l.max {
		var zero T
		return zero, false
	}
	old := l.root.prev
	l.Remove(old)
	return old.V, true
}
