// Package fair holds the fair-queuing machinery of distsem's semaphores:
// the in-process scheduler that core.Local uses once it has flows, and
// the hand of queues that a flow is dealt in a backend whose queues are
// bounded (shuffle sharding).
package fair

// MaxLevels is the number of priority levels; it equals core.MaxLevels.
const MaxLevels = 8

// Item is one queued request: the caller embeds it in its own type and
// sets V and Weight, so that queuing allocates nothing more.
type Item[T any] struct {
	V      T
	Weight int64 // the permits it asks for
	Level  int
	flow   *flow[T] // nil in a FIFO Queue
	next   *Item[T] // in its flow, or in a FIFO Queue
	prev   *Item[T]
}

// Flow returns the id of the item's flow: "" in a FIFO Queue.
func (it *Item[T]) Flow() string {
	if it.flow == nil {
		return ""
	}
	return it.flow.id
}

// flow is a flow with waiters at one level: its FIFO queue, and its place
// in the level's round.
type flow[T any] struct {
	id         string
	head, tail *Item[T]
	n          int
	quantum    int64 // the flow's weight
	deficit    int64
	next, prev *flow[T] // in the level's round
}

type level[T any] struct {
	flows   map[string]*flow[T] // the flows with waiters
	cur     *flow[T]            // the round's current flow; nil if none
	waiting int64
	use     int64 // the permits held at this level
}

// Sched orders queued requests: by priority level with reserves, and by
// deficit round robin between the flows of a level, FIFO within a flow.
// It keeps one queue per flow that has waiters, so its memory is bounded
// by the waiters. It is not safe for concurrent use.
type Sched[T any] struct {
	Reserves []int64          // per level; see core.Fairness
	Weights  map[string]int64 // per flow; 1 if absent
	levels   [MaxLevels]level[T]
	n        int
}

// Len returns the number of queued items.
func (s *Sched[T]) Len() int { return s.n }

// Level returns the permits held and the items queued at level l.
func (s *Sched[T]) Level(l int) (use, waiting int64) {
	return s.levels[l].use, s.levels[l].waiting
}

// Backlogged returns the number of flows with waiters.
func (s *Sched[T]) Backlogged() int64 {
	var n int
	for i := range s.levels {
		n += len(s.levels[i].flows)
	}
	return int64(n)
}

// Push queues it at the end of flow id at level l.
func (s *Sched[T]) Push(it *Item[T], id string, l int) {
	lv := &s.levels[l]
	f := lv.flows[id]
	if f == nil {
		if lv.flows == nil {
			lv.flows = make(map[string]*flow[T])
		}
		q := s.Weights[id]
		if q < 1 {
			q = 1
		}
		f = &flow[T]{id: id, quantum: q}
		lv.flows[id] = f
		if lv.cur == nil { // the round starts with f's turn
			f.next, f.prev, lv.cur, f.deficit = f, f, f, q
		} else { // last in the round: just before the current flow
			f.next, f.prev = lv.cur, lv.cur.prev
			lv.cur.prev.next, lv.cur.prev = f, f
		}
	}
	it.Level, it.flow = l, f
	pushBack(&f.head, &f.tail, it)
	f.n++
	lv.waiting++
	s.n++
}

// Remove takes it, which must be queued, out of s.
func (s *Sched[T]) Remove(it *Item[T]) {
	f, lv := it.flow, &s.levels[it.Level]
	unlink(&f.head, &f.tail, it)
	f.n--
	lv.waiting--
	s.n--
	if f.n > 0 {
		return
	}
	delete(lv.flows, f.id)
	if f.next == f {
		lv.cur = nil
		return
	}
	f.prev.next, f.next.prev = f.next, f.prev
	if lv.cur == f { // the next flow's turn
		lv.cur = f.next
		lv.cur.deficit += lv.cur.quantum
	}
}

// Next returns the request to grant next, or nil if none is queued: the
// head of the next flow in deficit round robin at the highest level that
// has waiters and holds less than its reserve, else at the highest level
// that has waiters. It moves the round on, but queues nothing and removes
// nothing: the caller grants the item (Grant) or leaves it for later.
func (s *Sched[T]) Next() *Item[T] {
	if s.n == 0 {
		return nil
	}
	for l := range s.levels {
		if lv := &s.levels[l]; lv.cur != nil && l < len(s.Reserves) && lv.use < s.Reserves[l] {
			return lv.peek()
		}
	}
	for l := range s.levels {
		if lv := &s.levels[l]; lv.cur != nil {
			return lv.peek()
		}
	}
	return nil
}

// peek moves the round to the first flow whose deficit covers its head's
// weight. A flow's turn ends when its deficit does not; the next flow's
// turn adds its quantum to its deficit.
func (lv *level[T]) peek() *Item[T] {
	for {
		f := lv.cur
		if f.deficit >= f.head.Weight {
			return f.head
		}
		lv.cur = f.next
		lv.cur.deficit += lv.cur.quantum
	}
}

// Grant removes it, the item Next returned, and counts its permits as
// held at its level.
func (s *Sched[T]) Grant(it *Item[T]) {
	lv := &s.levels[it.Level]
	it.flow.deficit -= it.Weight
	if it.flow.n == 1 {
		it.flow.deficit = 0 // a flow that empties keeps no credit
	}
	lv.use += it.Weight
	s.Remove(it)
}

// Held counts weight permits granted at level l outside Next (a grant to
// nobody queued).
func (s *Sched[T]) Held(l int, weight int64) { s.levels[l].use += weight }

// Released counts weight permits of level l as given back.
func (s *Sched[T]) Released(l int, weight int64) { s.levels[l].use -= weight }

// Items returns the queued items, level by level, flow by flow in round
// order, FIFO within a flow.
func (s *Sched[T]) Items() []*Item[T] {
	all := make([]*Item[T], 0, s.n)
	for l := range s.levels {
		lv := &s.levels[l]
		if lv.cur == nil {
			continue
		}
		f := lv.cur
		for {
			for it := f.head; it != nil; it = it.next {
				all = append(all, it)
			}
			if f = f.next; f == lv.cur {
				break
			}
		}
	}
	return all
}
