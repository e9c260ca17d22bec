//go:build linux

package servertest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

const autostartSupported = true

// credential is the user a server runs as; nil means this process's.
type credential = *syscall.Credential

// proc is a server process that this test binary started. Its exit is
// reaped with wait4 by the caller's goroutine, never by a background
// goroutine, so that goleak's check at the end of TestMain sees none.
type proc struct {
	cmd    *exec.Cmd
	pid    int
	exited bool
}

// startProc starts cmd in its own process group, so that a Ctrl-C aimed at
// `go test` does not reach it first, with the parent-death signal set to
// sig: when this test binary exits, however it exits, the kernel sends sig
// to the server. (The signal is tied to the OS thread that forked; Go only
// ends threads of goroutines that locked them, which tests do not.)
func startProc(cmd *exec.Cmd, sig syscall.Signal, cred credential) (*proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig, Credential: cred}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &proc{cmd: cmd, pid: cmd.Process.Pid}, nil
}

// alive reports whether the process still runs, reaping it if it exited.
func (p *proc) alive() bool {
	if p.exited {
		return false
	}
	var ws syscall.WaitStatus
	pid, err := syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
	if pid == p.pid || (err != nil && !errors.Is(err, syscall.EINTR)) {
		p.done()
		return false
	}
	return true
}

// signal sends sig to the process if it still runs.
func (p *proc) signal(sig syscall.Signal) error {
	if !p.alive() {
		return nil
	}
	return syscall.Kill(p.pid, sig)
}

// signalAndWait sends sig and waits up to d for the process to exit, then
// kills it. It returns once the process is gone and reaped.
func (p *proc) signalAndWait(sig syscall.Signal, d time.Duration) {
	if !p.alive() {
		return
	}
	_ = syscall.Kill(p.pid, sig)
	if !p.waitExit(d) {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		p.wait()
	}
}

// waitOrKillGroup waits up to d for the process to exit on its own, then
// kills its whole process group and reaps it.
func (p *proc) waitOrKillGroup(d time.Duration) {
	if !p.waitExit(d) {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		p.wait()
	}
}

// wait blocks until the process exits and reaps it.
func (p *proc) wait() {
	if p.exited {
		return
	}
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(p.pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	p.done()
}

func (p *proc) done() {
	p.exited = true
	_ = p.cmd.Process.Release()
}

// processExists reports whether a process with this pid exists.
func processExists(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// postgresCredential returns the credential to run PostgreSQL with: none
// when this process is not root, else the postgres user's (initdb refuses
// to run as root).
func postgresCredential() (credential, int, int, error) {
	if os.Geteuid() != 0 {
		return nil, -1, -1, nil
	}
	uid, gid, err := lookupUser("postgres")
	if err != nil {
		return nil, 0, 0, fmt.Errorf("running as root and no postgres user to run PostgreSQL as: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid, gid, nil
}
