package testwait_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distsem/distsem/internal/testwait"
)

// fakeT records a Fatalf and ends its goroutine, as testing.T does.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls Until with a fakeT on its own goroutine and returns the
// failure message, empty if Until returned.
func run(timeout time.Duration, what string, cond func() bool) string {
	f := &fakeT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testwait.Until(f, timeout, what, cond)
	}()
	<-done
	return f.msg
}

// A condition that becomes true ends the wait without a failure, and is
// not called again.
func TestUntilReturnsOnceTrue(t *testing.T) {
	var calls atomic.Int32
	if msg := run(time.Minute, "never", func() bool { return calls.Add(1) == 5 }); msg != "" {
		t.Fatalf("Until failed: %s", msg)
	}
	if n := calls.Load(); n != 5 {
		t.Fatalf("cond called %d times, want 5", n)
	}
}

// A condition that stays false fails with what, after the bound, and is
// called at the bound before the failure.
func TestUntilFailsWithWhat(t *testing.T) {
	begin := time.Now()
	var last time.Time
	msg := run(30*time.Millisecond, "the thing did not happen", func() bool { last = time.Now(); return false })
	if !strings.HasPrefix(msg, "the thing did not happen") {
		t.Fatalf("failure %q does not start with what", msg)
	}
	if d := last.Sub(begin); d < 30*time.Millisecond {
		t.Fatalf("last call of cond %v after the start, want at the 30ms bound", d)
	}
}
