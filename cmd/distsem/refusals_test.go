package main

import (
	"context"
	"strings"
	"testing"
)

// Bad flags, bad URLs, an unreachable Redis, a limit below 1 and the like:
// distsem prints one line on stderr, exits with the documented status, runs
// nothing and takes no permit.
func TestRunRefusesBeforeAnyPermit(t *testing.T) {
	t.Parallel()
	url := redisURL(t)
	name, prefix := uniqueName()
	sem, _ := testSem(t, name, prefix, 2)
	cases := []struct {
		what string
		args []string
		code int
	}{
		{"an unknown flag", []string{"-x", "-n", "2", "-name", name}, exitUsage},
		{"a limit of 0", []string{"-n", "0", "-name", name}, exitUsage},
		{"a negative limit", []string{"-n", "-3", "-name", name}, exitUsage},
		{"no limit", []string{"-name", name}, exitUsage},
		{"no name", []string{"-n", "2"}, exitUsage},
		{"a name the backend refuses", []string{"-n", "2", "-name", "a{b"}, exitUsage},
		{"a weight of 0", []string{"-n", "2", "-name", name, "-weight", "0"}, exitUsage},
		{"a weight above the limit", []string{"-n", "2", "-name", name, "-weight", "3"}, exitUsage},
		{"a lease below 100ms", []string{"-n", "2", "-name", name, "-ttl", "10ms"}, exitUsage},
		{"a note over 64 bytes", []string{"-n", "2", "-name", name, "-note", strings.Repeat("n", 65)}, exitUsage},
		{"a bad duration", []string{"-n", "2", "-name", name, "-wait", "soon"}, exitUsage},
		{"an unknown scheme", []string{"-n", "2", "-name", name, "-redis", "http://127.0.0.1:1"}, exitUsage},
		{"a URL without a scheme", []string{"-n", "2", "-name", name, "-redis", "127.0.0.1:6379"}, exitUsage},
		{"a Sentinel URL without a master", []string{"-n", "2", "-name", name, "-redis", "redis-sentinel://127.0.0.1:1"}, exitUsage},
		{"an unknown backend", []string{"-n", "2", "-name", name, "-backend", "etcd"}, exitUsage},
		{"an unreachable Redis", []string{"-n", "2", "-name", name, "-redis", "redis://127.0.0.1:1"}, exitUnavailable},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			file := tempFile(t, "ran")
			args := append([]string{"run", "-redis", url, "-prefix", prefix}, c.args...)
			cmd, stdout, stderr := distsem(t, append(args, "--", "sh", "-c", `echo ran >"$0"`, file)...)
			if code := exitCode(t, cmd); code != c.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, c.code, stderr)
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "distsem: ") || stdout.Len() != 0 {
				t.Errorf("stderr %q and stdout %q, want one line starting \"distsem: \" and nothing", stderr, stdout)
			}
			if readFile(t, file) != nil {
				t.Error("the command ran")
			}
			if n := inUse(t, sem); n != 0 {
				t.Errorf("%d permits in use, want 0", n)
			}
		})
	}
}

// No -redis and no REDIS_URL is a usage error, as is no command.
func TestRunNeedsRedisAndCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "-n", "1", "-name", "x", "--", "true"},
		{"run", "-redis", "redis://127.0.0.1:1", "-n", "1", "-name", "x"},
	} {
		cmd, _, stderr := distsem(t, args...)
		cmd.Env = append(cmd.Env, "REDIS_URL=")
		if code := exitCode(t, cmd); code != exitUsage {
			t.Errorf("%q: exit status %d, want %d; stderr: %s", args, code, exitUsage, stderr)
		}
	}
}

// A command that cannot start gives 127 or 126, as in sh, and gives the
// permit back; the command's own status and death by a signal pass
// through.
func TestRunPassesCommandStatusOn(t *testing.T) {
	t.Parallel()
	url := redisURL(t)
	name, prefix := uniqueName()
	sem, _ := testSem(t, name, prefix, 1)
	dir := t.TempDir()
	cases := []struct {
		argv []string
		code int
	}{
		{[]string{"sh", "-c", "exit 3"}, 3},
		{[]string{"sh", "-c", `kill -TERM $$`}, 128 + 15},
		{[]string{"distsem-no-such-command"}, exitNotFound},
		{[]string{dir}, exitCannotExec},
	}
	for _, c := range cases {
		cmd, _, stderr := distsem(t, append([]string{"run", "-redis", url, "-prefix", prefix, "-n", "1", "-name", name, "--"}, c.argv...)...)
		if code := exitCode(t, cmd); code != c.code {
			t.Errorf("%q: exit status %d, want %d; stderr: %s", c.argv, code, c.code, stderr)
		}
	}
	if st, err := sem.Stats(context.Background()); err != nil || st.InUse != 0 {
		t.Errorf("stats %+v, %v after the runs; want nothing in use", st, err)
	}
}
