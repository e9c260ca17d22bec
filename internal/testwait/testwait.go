// Package testwait waits, in tests, for a condition to hold. It is the one
// polling loop of distsem's tests: a test that waits for something another
// goroutine, process or server does calls Until with the condition and a
// bound, instead of sleeping for a fixed time or writing its own loop.
package testwait

import (
	"testing"
	"time"
)

// Pause bounds: the first poll again comes after minPause, each next one
// after twice the last, up to maxPause.
const (
	minPause = 100 * time.Microsecond
	maxPause = 20 * time.Millisecond
)

// Until calls cond until it returns true, and fails t (Fatalf, naming what
// and timeout) if timeout passes first. It calls cond once more at the
// bound before it fails. Between calls it waits a short pause that grows
// from 100µs to 20ms, so that a fast condition is seen at once and a slow
// one does not spin. cond runs on the calling goroutine: it may use t,
// including to fail the test.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := minPause
	for !cond() {
		left := time.Until(deadline)
		if left < 0 {
			t.Fatalf("%s (waited %v)", what, timeout)
			return
		}
		time.Sleep(min(pause, left))
		pause = min(2*pause, maxPause)
	}
}
