package redissem

import "time"

// NoteReleases records n releases of id on s's backend, each with lease
// TTL ttl, as n successful Releases do.
func NoteReleases(s *Semaphore, id string, ttl time.Duration, n int) {
	for range n {
		s.b.noteReleased(s, id, ttl)
	}
}

// ReplayableReleases returns how many releases s's backend would run again
// if its subscription moved now.
func ReplayableReleases(s *Semaphore) int {
	n := 0
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.b.redo.live(time.Now(), func(*redo) { n++ })
	return n
}
