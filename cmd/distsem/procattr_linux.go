package main

import "syscall"

// setDeathSignal has the kernel send the command SIGKILL when distsem
// dies, whatever kills it (PR_SET_PDEATHSIG).
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
