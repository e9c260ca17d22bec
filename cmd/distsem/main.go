// Command distsem limits how many processes do something at once across a
// fleet, with a semaphore kept in Redis or Consul. Run `distsem -h` for
// its commands, URL schemes and exit statuses; README.md has examples.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

const usage = `Usage: distsem <command> [flags] [arguments]

distsem is a counting semaphore shared by every process that uses the
same Redis (or Consul): at most N holders of a name at once, fleet-wide.

Commands:
  run        run a command while holding a permit
  status     print the limit, the permits in use and the waiters
  set-limit  change a semaphore's limit for every process
  watch      follow a semaphore's state live

Run 'distsem <command> -h' for a command's flags. Every command takes:
  -backend redis|consul  where the semaphores live (default redis)
  -redis URL             the Redis URL (default $REDIS_URL)
  -consul ADDR           the Consul HTTP address (default $CONSUL_HTTP_ADDR,
                         else 127.0.0.1:8500; $CONSUL_HTTP_TOKEN is used)
  -prefix P              the prefix of every key (default "distsem:")

Redis URLs (the rediss forms use TLS):
  redis://[user:password@]host:port[/db][?option=value&...]
  rediss://...
  redis-sentinel://[user:password@]host:port[,host:port...]/master[/db][?...]
  rediss-sentinel://...
  redis-cluster://[user:password@]host:port[,host:port...][?...]
  rediss-cluster://...
Options are go-redis's, in snake case: dial_timeout=2s, pool_size=4, ...
In a Sentinel URL, user:password authenticate to Redis, and the options
sentinel_username and sentinel_password to the Sentinels.

Exit status:
  0      success; for run, the command exited 0
  1-125  run: the command's own exit status, passed through
  64     usage: a bad flag, argument, name, limit or URL (EX_USAGE)
  69     the backend is unreachable or failing (EX_UNAVAILABLE)
  70     an internal error (EX_SOFTWARE)
  75     run: no permit within -wait, or the lease was lost and the
         command was stopped (EX_TEMPFAIL: try again later)
  126    run: the command could not be executed
  127    run: the command was not found
  128+n  run: the command was killed by signal n, or distsem got signal n
         (SIGINT, SIGTERM, SIGHUP) while it waited for a permit
A command may itself exit with 64 to 75: distsem's own failures are the
ones that print a line starting with "distsem:" on stderr.
`

// Exit statuses; the usage text documents them. The 64-78 range is the
// sysexits.h convention.
const (
	exitOK          = 0
	exitUsage       = 64  // EX_USAGE
	exitUnavailable = 69  // EX_UNAVAILABLE
	exitSoftware    = 70  // EX_SOFTWARE
	exitTempFail    = 75  // EX_TEMPFAIL
	exitCannotExec  = 126 // the shell's status for a command found but not executable
	exitNotFound    = 127 // the shell's status for a command not found
	exitSignal      = 128 // + the signal's number
)

// app is one invocation: where it writes.
type app struct {
	stdout, stderr io.Writer
}

type command struct {
	name string
	run  func(a *app, ctx context.Context, args []string) error
}

var commands = []command{
	{"run", (*app).runCmd},
	{"status", (*app).statusCmd},
	{"set-limit", (*app).setLimitCmd},
	{"watch", (*app).watchCmd},
}

func main() {
	a := &app{stdout: os.Stdout, stderr: os.Stderr}
	os.Exit(a.main(os.Args[1:]))
}

// main runs the command of args and returns the exit status.
func (a *app) main(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(a.stdout, usage)
		return exitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			return a.exit(c.run(a, context.Background(), args[1:]))
		}
	}
	return a.exit(usageErrorf("unknown command %q (run 'distsem -h' for the commands)", args[0]))
}

// exit prints err's message, if any, as one line on stderr and returns the
// exit status that it stands for.
func (a *app) exit(err error) int {
	if err == nil {
		return exitOK
	}
	var e *exitError
	if !errors.As(err, &e) {
		e = &exitError{code: exitSoftware, msg: err.Error()}
	}
	if e.msg != "" {
		fmt.Fprintln(a.stderr, "distsem: "+e.msg)
	}
	return e.code
}

// exitError ends the invocation with code, after msg (if not empty) is
// printed on stderr.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

// exitWithSignal is the status of a process ended by sig.
func exitWithSignal(sig os.Signal) error {
	n := 0
	if s, ok := sig.(syscall.Signal); ok {
		n = int(s)
	}
	return &exitError{code: exitSignal + n}
}

// stopSignals are the signals that end distsem's commands, and that run
// passes on to its command.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}
