package redissem

import (
	"fmt"
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

// Semaphores that nothing uses any more are dropped in batches: they do
// not set when the loop wakes, which is at most idleSweep away while any
// is kept. One used again renews from its new permit.
func TestIdleSemaphoresDoNotTimeTheLoop(t *testing.T) {
	c := miniClient(t)
	s := New(c, "idle0", 1)
	defer s.Close()
	b := s.b
	b.mu.Lock()
	b.looping = true // no loop: this test calls beat itself
	now := time.Now()
	busy := b.semaphore("busy", 1, false)
	b.sems[busy] = &semTrack{held: map[*holder]time.Time{{}: now.Add(10 * time.Second)}, nextBeat: now.Add(3 * time.Second)}
	var idle []*Semaphore
	for i := range 100 { // due from now on, idle[0] at once
		is := b.semaphore(fmt.Sprint("idle", i+1), 1, false)
		idle = append(idle, is)
		b.sems[is] = &semTrack{held: map[*holder]time.Time{}, nextBeat: now.Add(time.Duration(i) * time.Millisecond)}
	}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.looping = false
		clear(b.sems)
		b.mu.Unlock()
	}()

	if next := b.beat(); next < idleSweep/2 {
		t.Fatalf("the loop sleeps %v with 100 idle semaphores due within 100ms; want about idleSweep (%v)", next, idleSweep)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, kept := b.sems[idle[99]]; !kept {
		t.Fatal("an idle semaphore was dropped before its time")
	}
	// Used again: its next heartbeat is its new permit's, not the old
	// (past) one.
	t0 := b.sems[idle[99]]
	t0.nextBeat = time.Now().Add(-time.Second)
	b.track(idle[99], 9*time.Second)
	if d := time.Until(t0.nextBeat); d < 2*time.Second {
		t.Fatalf("a semaphore used again beats in %v; want its new permit's TTL/3 (3s)", d)
	}
}
