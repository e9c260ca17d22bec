//go:build unix && !linux

package main

import "syscall"

// setDeathSignal does nothing: only Linux can signal a child when its
// parent dies. Killed with SIGKILL, distsem leaves its command running
// without a permit there.
func setDeathSignal(*syscall.SysProcAttr) {}
