package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distsem/distsem/internal/testwait"
)

// startHolding starts distsem run -n 1 with runChild's hold mode and
// returns once the command runs under the permit.
func startHolding(t *testing.T, name, prefix, file string, flags ...string) *execCmd {
	t.Helper()
	args := append([]string{"run", "-redis", redisURL(t), "-prefix", prefix, "-n", "1", "-name", name}, flags...)
	cmd, _, stderr := distsem(t, append(args, child("hold", file)...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	testwait.Until(t, 30*time.Second, "the command never started", func() bool { return len(readFile(t, file)) > 0 })
	return &execCmd{cmd, stderr}
}

// SIGKILL of distsem: the kernel kills its command at once
// (PR_SET_PDEATHSIG), and the permit comes back when its lease ends.
func TestKilledRunKillsCommandAndPermitReturns(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("only Linux kills the command of a killed distsem")
	}
	name, prefix := uniqueName()
	file := tempFile(t, "hold")
	const ttl = time.Second
	c := startHolding(t, name, prefix, file, "-ttl", ttl.String())
	sem, _ := testSem(t, name, prefix, 1)
	if got := inUse(t, sem); got != 1 {
		t.Fatalf("in use %d while the command runs, want 1", got)
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// The command shares distsem's stdout and stderr: Wait returns once
	// both processes are gone.
	if err := c.cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("distsem ended with %v, want killed", err)
	}
	var pid int
	if _, err := fmt.Sscanf(readFile(t, file)[0], "pid %d", &pid); err != nil {
		t.Fatal(err)
	}
	// Its pipes close before the kernel marks it a zombie: a short wait
	// for the rest of its exit (without PR_SET_PDEATHSIG it would live on).
	testwait.Until(t, 5*time.Second, fmt.Sprintf("the command (pid %d) outlived distsem", pid), func() bool { return processGone(pid) })
	testwait.Until(t, ttl+2*time.Second, "the permit never came back", func() bool { return inUse(t, sem) == 0 })
	if d := time.Since(killed); d > ttl+500*time.Millisecond {
		t.Errorf("the permit came back %v after SIGKILL, want within the lease (%v)", d, ttl)
	}
}

// A lost lease (the permit released by its id from another process, as
// an operator would) stops the command: SIGTERM, which it ignores, then
// SIGKILL after -grace; distsem exits 75.
func TestLostLeaseStopsCommand(t *testing.T) {
	t.Parallel()
	name, prefix := uniqueName()
	file := tempFile(t, "hold")
	c := startHolding(t, name, prefix, file, "-ttl", "1s", "-grace", "300ms")
	sem, _ := testSem(t, name, prefix, 1)
	ctx := context.Background()
	snap, err := sem.Inspect(ctx, 10)
	if err != nil || len(snap.Holders) != 1 {
		t.Fatalf("holders of %s: %+v, %v", name, snap.Holders, err)
	}
	if err := sem.ReleaseID(ctx, snap.Holders[0].ID); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, c.cmd); code != exitTempFail {
		t.Fatalf("distsem exited %d, want %d; stderr:\n%s", code, exitTempFail, c.stderr)
	}
	if lines := readFile(t, file); len(lines) != 2 || lines[1] != "term" {
		t.Errorf("the command recorded %q, want its start and one SIGTERM", lines)
	}
	for _, want := range []string{"was lost: sending SIGTERM", "sending SIGKILL"} {
		if !strings.Contains(c.stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, c.stderr)
		}
	}
}

// processGone reports whether pid has exited (a zombie has).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(after, "Z")
}
