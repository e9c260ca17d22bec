package main

import (
	"testing"
)

// Twenty distsem run -n 2 started at once all run their command, and no
// more than two commands ever run at the same time: each command appends
// S when it starts and E when it ends to one file (sh's >> opens it with
// O_APPEND), so the file's order is the order of the events. The sleep is
// the command's work, not a wait for something.
func TestRunTwentyAtOnceHoldTwoAtMost(t *testing.T) {
	t.Parallel()
	url := redisURL(t)
	name, prefix := uniqueName()
	file := tempFile(t, "events")
	const n = 20
	var cmds [n]*execCmd
	for i := range cmds {
		cmd, _, stderr := distsem(t, append([]string{"run", "-redis", url, "-prefix", prefix, "-n", "2", "-name", name}, "--", "sh", "-c", `echo S >>"$0"; sleep 0.2; echo E >>"$0"`, file)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = &execCmd{cmd, stderr}
	}
	for _, c := range cmds {
		if code := exitCode(t, c.cmd); code != 0 {
			t.Errorf("distsem exited %d: %s", code, c.stderr)
		}
	}
	depth, most, starts := 0, 0, 0
	for _, e := range readFile(t, file) {
		switch e {
		case "S":
			depth++
			starts++
		case "E":
			depth--
		}
		most = max(most, depth)
	}
	if most > 2 || starts != n || depth != 0 {
		t.Fatalf("%d commands ran, at most %d at once, %d not ended; want %d, at most 2, 0", starts, most, depth, n)
	}
	t.Logf("at most %d commands ran at once", most)
}
