package analyze

import (
	"container/heap"
)

// sim is a discrete-event model of a semaphore with round trip rtt (half
// each way) and a wake-up delay for a notified waiter. fifo: the release
// hands the permit to the head of the queue in the same step (distsem's
// design). Otherwise (barging, the ZSET + BRPOP design): the release frees the
// permit and wakes the head, which must ask again; whoever reaches the
// server first gets the permit, and a loser queues again at the tail.
type sim struct {
	limit, workers       int
	hold, rtt, wake, end int64
	fifo                 bool

	now    int64
	seq    int
	free   int
	queue  []int // waiting workers
	acts   actHeap
	cur    []Event // the grant each worker is working on
	events []Event
}

type act struct {
	t   int64
	seq int
	f   func()
}

type actHeap []act

func (h actHeap) Len() int { return len(h) }
func (h actHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}
func (h actHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *actHeap) Push(x any)   { *h = append(*h, x.(act)) }
func (h *actHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (s *sim) at(t int64, f func()) {
	s.seq++
	heap.Push(&s.acts, act{t, s.seq, f})
}

func (s *sim) run() []Event {
	s.free = s.limit
	s.cur = make([]Event, s.workers)
	for w := range s.workers {
		// Stagger the first calls by 1µs so no two instants tie.
		s.acquire(w, int64(w)*1000)
	}
	for s.acts.Len() > 0 {
		a := heap.Pop(&s.acts).(act)
		s.now = a.t
		a.f()
	}
	return s.events
}

// acquire: the worker calls Acquire at t.
func (s *sim) acquire(w int, t int64) {
	if t >= s.end {
		return
	}
	s.cur[w] = Event{Proc: int32(w % 4), Gor: int32(w), AcqStart: t}
	s.at(t+s.rtt/2, func() { s.serverAcquire(w) })
}

func (s *sim) serverAcquire(w int) {
	if s.free > 0 && (len(s.queue) == 0 || !s.fifo) {
		s.free--
		s.grantAt(w, s.now, s.now+s.rtt/2)
		return
	}
	s.queue = append(s.queue, w)
}

func (s *sim) grantAt(w int, server, client int64) {
	s.at(client, func() {
		e := &s.cur[w]
		e.Grant, e.ServerGrant = client, server
		e.RelStart = client + s.hold
		e.RelDone = e.RelStart + s.rtt
		s.at(e.RelStart+s.rtt/2, s.serverRelease)
		s.at(e.RelDone, func() {
			s.events = append(s.events, s.cur[w])
			s.acquire(w, s.now)
		})
	})
}

func (s *sim) serverRelease() {
	if len(s.queue) == 0 {
		s.free++
		return
	}
	h := s.queue[0]
	s.queue = s.queue[1:]
	if s.fifo {
		s.grantAt(h, s.now, s.now+s.wake)
		return
	}
	s.free++
	// The woken waiter asks again; its check reaches the server later.
	s.at(s.now+s.wake+s.rtt/2, func() {
		if s.free > 0 {
			s.free--
			s.grantAt(h, s.now, s.now+s.rtt/2)
			return
		}
		s.queue = append(s.queue, h)
	})
}

func simWorkers(n int) []Worker {
	ws := make([]Worker, n)
	for w := range ws {
		ws[w] = Worker{int32(w % 4), int32(w)}
	}
	return ws
}
