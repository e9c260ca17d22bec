package redissem

import (
	"testing"
	"time"
)

// A semaphore tracked anew wakes the heartbeat loop only when its first
// heartbeat is due before the loop would wake anyway: with many
// semaphores each used once in a while, the loop does not scan them all
// at every first use.
func TestTrackWakesTheLoopOnlyForAnEarlierBeat(t *testing.T) {
	c := miniClient(t)
	s1 := New(c, "wake1", 1)
	defer s1.Close()
	b := s1.b
	s2 := b.semaphore("wake2", 1, false)
	woken := func() bool {
		select {
		case <-b.wake:
			return true
		default:
			return false
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.looping {
		t.Fatal("the loop runs before any acquire")
	}
	b.looping = true // no loop: this test plays its part
	defer func() {
		b.looping = false
		delete(b.sems, s1)
		delete(b.sems, s2)
	}()
	woken()

	b.loopNext = time.Now().Add(time.Hour)
	b.track(s1, 10*time.Second)
	if !woken() {
		t.Fatal("a heartbeat due in 3.3s did not wake a loop asleep for an hour")
	}
	b.loopNext = time.Now().Add(time.Second)
	b.track(s2, 10*time.Second)
	if woken() {
		t.Fatal("a heartbeat due in 3.3s woke a loop that wakes within 1s")
	}
	b.track(s2, 900*time.Millisecond)
	if !woken() {
		t.Fatal("a heartbeat due in 0.3s did not wake a loop that wakes in 1s")
	}
}
