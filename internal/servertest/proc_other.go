//go:build !linux

package servertest

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// Starting servers needs the parent-death signal, which only Linux has, so
// that no server outlives the test binary. Elsewhere the tests use the
// DISTSEM_* variables or skip.
const autostartSupported = false

type credential = any

type proc struct{ pid int }

func startProc(*exec.Cmd, syscall.Signal, credential) (*proc, error) {
	return nil, errUnsupportedOS
}

func (p *proc) alive() bool                                 { return false }
func (p *proc) signalAndWait(syscall.Signal, time.Duration) {}
func (p *proc) wait()                                       {}
func (p *proc) signal(syscall.Signal) error                 { return nil }
func (p *proc) waitOrKillGroup(time.Duration)               {}

func postgresCredential() (credential, int, int, error) {
	return nil, 0, 0, errUnsupportedOS
}

func processExists(int) bool { return true }

var errExited, errNoSignal error

func waitLog(int, func() bool, string, int64, string, time.Duration) error { return errUnsupportedOS }

func fileSize(string) int64 { return 0 }

func awaitFiles(context.Context, []string, func() bool) error { return errUnsupportedOS }
