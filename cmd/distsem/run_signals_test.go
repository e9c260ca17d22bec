package main

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/distsem/distsem/internal/testwait"
)

// SIGTERM and SIGINT sent to distsem reach its command; the command's
// death by SIGINT is distsem's status (130), and the permit comes back.
func TestRunPassesSignalsOn(t *testing.T) {
	t.Parallel()
	name, prefix := uniqueName()
	file := tempFile(t, "hold")
	c := startHolding(t, name, prefix, file)
	sem, _ := testSem(t, name, prefix, 1)
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "the command never got SIGTERM", func() bool { return len(readFile(t, file)) == 2 })
	if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, c.cmd); code != exitSignal+int(syscall.SIGINT) {
		t.Fatalf("distsem exited %d, want %d; stderr:\n%s", code, exitSignal+int(syscall.SIGINT), c.stderr)
	}
	if n := inUse(t, sem); n != 0 {
		t.Fatalf("%d permits in use after the command died, want 0", n)
	}
}

// A signal while distsem waits for a permit ends the wait: 128+n, the
// command never runs, and no permit is left taken.
func TestRunSignalWhileWaiting(t *testing.T) {
	t.Parallel()
	name, prefix := uniqueName()
	sem, _ := testSem(t, name, prefix, 1)
	hold(t, sem)
	file := tempFile(t, "ran")
	cmd, _, stderr := distsem(t, "run", "-redis", redisURL(t), "-prefix", prefix, "-n", "1", "-name", name, "--", "sh", "-c", `echo ran >"$0"`, file)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	testwait.Until(t, 10*time.Second, "distsem never queued", func() bool {
		st, err := sem.Stats(ctx)
		return err == nil && st.Waiting == 1
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd); code != exitSignal+int(syscall.SIGTERM) {
		t.Fatalf("distsem exited %d, want %d; stderr:\n%s", code, exitSignal+int(syscall.SIGTERM), stderr)
	}
	if readFile(t, file) != nil {
		t.Error("the command ran")
	}
	testwait.Until(t, 10*time.Second, "distsem's queue entry stayed", func() bool {
		st, err := sem.Stats(ctx)
		return err == nil && st.Waiting == 0 && st.InUse == 1
	})
}

// With -wait, distsem gives up with 75 when no permit comes in time.
func TestRunWaitRunsOut(t *testing.T) {
	t.Parallel()
	name, prefix := uniqueName()
	sem, _ := testSem(t, name, prefix, 1)
	hold(t, sem)
	cmd, _, stderr := distsem(t, "run", "-redis", redisURL(t), "-prefix", prefix, "-n", "1", "-name", name, "-wait", "200ms", "--", "true")
	if code := exitCode(t, cmd); code != exitTempFail {
		t.Fatalf("distsem exited %d, want %d; stderr:\n%s", code, exitTempFail, stderr)
	}
}
