//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// childProcAttr puts the command in a process group of its own, so that
// signals reach every process it started, and makes that group the
// terminal's foreground group when distsem's is, so that the command can
// read the terminal and Ctrl-C reaches it. restore, called once the
// command exited, gives the terminal back to distsem's group. On Linux the
// command also gets SIGKILL when distsem dies (see setDeathSignal).
func childProcAttr() (a *syscall.SysProcAttr, restore func()) {
	a = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(a)
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return a, func() {}
	}
	own := syscall.Getpgrp()
	if fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err != nil || fg != own {
		return a, func() {}
	}
	a.Foreground, a.Ctty = true, fd
	return a, func() {
		// A background group that sets the foreground gets SIGTTOU.
		signal.Ignore(syscall.SIGTTOU)
		defer signal.Reset(syscall.SIGTTOU)
		_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, own)
	}
}
