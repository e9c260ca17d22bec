package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The machine is shared (other jobs may compile or test while a run is in
// progress), so every run reports where the CPU went: the whole machine
// (/proc/stat), the worker processes (their rusage), redis-server
// (/proc/<pid>/stat, when -redis-pid is given) and everything else.

const clkTck = 100 // USER_HZ on Linux

// machineBusy returns the busy jiffies of all CPUs since boot.
func machineBusy() (int64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected %q", line)
	}
	var busy int64
	for i, s := range f[1:] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, err
		}
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest times are in user already
			continue
		}
		busy += v
	}
	return busy, nil
}

// procCPU returns utime+stime of a process, in jiffies.
func procCPU(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	// After the command: state(3) ... utime(14) stime(15), 1-based in stat.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad times", pid)
	}
	return u + st, nil
}

// cpuSample is a snapshot taken at the start and end of the measured run.
type cpuSample struct {
	machine, redis int64
}

func sampleCPU(redisPID int) cpuSample {
	var s cpuSample
	s.machine, _ = machineBusy()
	if redisPID > 0 {
		s.redis, _ = procCPU(redisPID)
	}
	return s
}
