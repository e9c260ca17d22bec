package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/distsem/distsem/core"
)

// runHolding runs argv while p is held and returns its exit status (see
// childStatus). It passes the signals of sigs on to the command's process
// group, and stops the group when p's lease is lost: SIGTERM, then SIGKILL
// after o.grace. A command that could not start is an exit error of 126
// or 127; a lost lease, one of 75 once the command is gone.
func (a *app) runHolding(p *core.Permit, o *runOptions, argv []string, sigs <-chan os.Signal) (int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"DISTSEM_NAME="+o.name,
		"DISTSEM_WEIGHT="+strconv.FormatInt(p.Weight(), 10),
		"DISTSEM_TOKEN="+strconv.FormatInt(p.Token(), 10),
		"DISTSEM_PERMIT_ID="+p.ID())
	var restore func()
	cmd.SysProcAttr, restore = childProcAttr()
	defer restore()
	exited, err := start(cmd)
	if err != nil {
		return 0, startError(argv[0], err)
	}
	group := -cmd.Process.Pid // the command leads its own process group

	lost := p.Lost()
	lostLease := false
	var kill <-chan time.Time
	for {
		select {
		case err := <-exited:
			if lostLease {
				return 0, &exitError{code: exitTempFail, msg: fmt.Sprintf("the lease on %s was lost; the command was stopped", o.name)}
			}
			return childStatus(cmd.ProcessState, err)
		case s := <-sigs:
			_ = syscall.Kill(group, s.(syscall.Signal))
		case <-lost:
			lost, lostLease = nil, true
			fmt.Fprintf(a.stderr, "distsem: the lease on %s was lost: sending SIGTERM to the command\n", o.name)
			_ = syscall.Kill(group, syscall.SIGTERM)
			t := time.NewTimer(o.grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			fmt.Fprintf(a.stderr, "distsem: the command still runs %v after SIGTERM: sending SIGKILL\n", o.grace)
			_ = syscall.Kill(group, syscall.SIGKILL)
		}
	}
}

// start starts cmd and returns a channel that gets the result of its Wait.
// The thread that starts the command stays alive until the command exits:
// PR_SET_PDEATHSIG fires when the thread that forked the child ends, not
// only when the process does, and the Go runtime may end an idle thread.
func start(cmd *exec.Cmd) (<-chan error, error) {
	started := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	return exited, <-started
}

// startError is the exit error of a command that did not start: 127 when
// it was not found, 126 when it could not be executed, as in sh.
func startError(name string, err error) error {
	code := exitCannotExec
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		code = exitNotFound
	}
	return &exitError{code: code, msg: fmt.Sprintf("run: cannot run %s: %v", name, err)}
}

// childStatus is the exit status that passes the command's on: its own,
// or 128+n when signal n killed it.
func childStatus(ps *os.ProcessState, err error) (int, error) {
	if ps == nil {
		return 0, err
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignal + int(ws.Signal()), nil
	}
	return ps.ExitCode(), nil
}
