//go:build linux

package servertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The waits below sleep on the events they wait for, never on a timer: a
// process's exit on its pidfd, a server's log line on inotify events for
// the log's directory, both with poll(2) bounded by the deadline. On a
// kernel without pidfd_open (before 5.3) an exit is noticed by checking
// every degradedTick instead.

var (
	errExited   = errors.New("exited")
	errNoSignal = errors.New("timed out")
)

const degradedTick = 50 * time.Millisecond

// pidfd returns a pidfd for pid, or -1 if the kernel has none to give.
func pidfd(pid int) int {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1
	}
	return fd
}

// readable reports whether fd polls readable now (a pidfd: the process
// has exited).
func readable(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// await blocks until one of fds is readable or deadline passes, and
// reports false in the latter case. A negative fd is ignored (as poll(2)
// does); with degraded, it returns after at most degradedTick.
func await(deadline time.Time, degraded bool, fds ...int) bool {
	pfds := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		pfds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		if degraded {
			left = min(left, degradedTick)
		}
		// Round up, so that a wait never ends just before the deadline.
		ms := int((left + time.Millisecond - 1) / time.Millisecond)
		n, err := unix.Poll(pfds, ms)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil || n > 0 || degraded:
			return true
		}
	}
}

// waitExit waits up to d for the process to exit, and reaps it. It reports
// whether the process is gone.
func (p *proc) waitExit(d time.Duration) bool {
	deadline := time.Now().Add(d)
	fd := pidfd(p.pid)
	if fd >= 0 {
		defer unix.Close(fd)
	}
	for p.alive() {
		if !await(deadline, fd < 0, fd) {
			return !p.alive()
		}
	}
	return true
}

// waitLog waits until the file at path holds, past its first off bytes, a
// line containing needle: a server announcing that it is ready. It returns
// errExited once the process pid has exited (alive reports false; alive
// may reap it), or errNoSignal after d.
func waitLog(pid int, alive func() bool, path string, off int64, needle string, d time.Duration) error {
	deadline := time.Now().Add(d)
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("inotify: %w", err)
	}
	defer unix.Close(in)
	// Watch the directory: the file may not exist yet.
	if _, err := unix.InotifyAddWatch(in, filepath.Dir(path), unix.IN_CREATE|unix.IN_MODIFY|unix.IN_MOVED_TO); err != nil {
		return fmt.Errorf("inotify %s: %w", filepath.Dir(path), err)
	}
	fd := pidfd(pid)
	if fd >= 0 {
		defer unix.Close(fd)
	}
	events := make([]byte, 4096)
	for {
		// Check the file after the watch exists, so no write is missed.
		if logHas(path, off, needle) {
			return nil
		}
		if (fd >= 0 && readable(fd)) || !alive() {
			return errExited
		}
		if !await(deadline, fd < 0, in, fd) {
			return errNoSignal
		}
		for { // drain the events: the file says what happened
			if n, err := unix.Read(in, events); n <= 0 || err != nil {
				break
			}
		}
	}
}

// logHas reports whether the file at path holds needle past offset off.
func logHas(path string, off int64, needle string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, off, 1<<40))
	return err == nil && strings.Contains(string(b), needle)
}

// fileSize returns the size of the file at path, or 0 if it does not exist.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// recheck is how often awaitFiles checks its condition when no file
// changes: a safety net for a change that writes nothing, not the way it
// normally wakes.
const recheck = time.Second

// awaitFiles calls ok, and again whenever a file in one of dirs is
// created, written or renamed into place (a server's log line, Redis
// Cluster's nodes.conf, a Sentinel's rewritten configuration: the servers
// write one of these on every change of state that the tests wait for),
// until ok returns true (nil) or ctx ends (its error).
func awaitFiles(ctx context.Context, dirs []string, ok func() bool) error {
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("inotify: %w", err)
	}
	defer unix.Close(in)
	for _, dir := range dirs {
		if _, err := unix.InotifyAddWatch(in, dir, unix.IN_CREATE|unix.IN_MODIFY|unix.IN_MOVED_TO); err != nil {
			return fmt.Errorf("inotify %s: %w", dir, err)
		}
	}
	deadline, bounded := ctx.Deadline()
	events := make([]byte, 4096)
	for !ok() { // checked after the watches exist: no change is missed
		if ctx.Err() != nil {
			return ctx.Err()
		}
		until := time.Now().Add(recheck)
		if bounded && deadline.Before(until) {
			until = deadline
		}
		await(until, false, in)
		for {
			if n, err := unix.Read(in, events); n <= 0 || err != nil {
				break
			}
		}
	}
	return nil
}
