package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/distsem/distsem/core"
)

const runHead = `Usage: distsem run -n N -name NAME [flags] -- command [argument...]

Acquires a permit of the semaphore NAME, runs the command while it holds
the permit, releases the permit when the command exits, and exits with the
command's status. At most N permits of NAME are held at once by all the
processes that use it (a command holds -weight of them). The limit lives
in the backend: the first process to use NAME stores N, later ones use the
stored limit whatever their -n, and set-limit changes it.

The command's environment has DISTSEM_NAME, DISTSEM_WEIGHT, DISTSEM_TOKEN
(the fencing token: it increases with every grant of NAME, across all
processes) and DISTSEM_PERMIT_ID (the permit's id; empty on Consul).

The command runs in a process group of its own (in the terminal's
foreground when distsem is), and signals go to that whole group:
  - SIGINT, SIGTERM and SIGHUP that distsem gets are passed on.
  - If the lease is lost (the backend lost the permit, or distsem could not
    renew it for -ttl), the group gets SIGTERM, and SIGKILL -grace later if
    the command still runs; distsem then exits 75.
  - On Linux, if distsem dies, even by SIGKILL, the kernel sends the
    command SIGKILL (PR_SET_PDEATHSIG), so it does not run on without a
    permit; the permit comes back when its lease ends, at most -ttl later.
    Processes the command started are not reached then: in sh -c, exec
    the last command so that it is the one that gets the signal.
If no permit comes within -wait, or distsem gets a signal while it waits,
it takes no permit, runs nothing and exits 75 or 128+n.
`

type runOptions struct {
	limit, weight int64
	name, note    string
	wait, ttl     time.Duration
	grace         time.Duration
}

func (a *app) runCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("run")
	var bf backendFlags
	var o runOptions
	fs.Int64Var(&o.limit, "n", 0, "the limit of NAME: at most `N` permits held at once (required)")
	fs.StringVar(&o.name, "name", "", "the semaphore's name, `NAME` (required)")
	fs.Int64Var(&o.weight, "weight", 1, "the permits the command holds, `W`")
	fs.DurationVar(&o.wait, "wait", 0, "give up, exit 75, if no permit comes within this `duration`; 0 waits as long as it takes")
	fs.DurationVar(&o.ttl, "ttl", 10*time.Second, "the permit's lease: renewed while distsem runs, it ends this `duration` after distsem dies (at least 100ms; Consul's minimum is 10s)")
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "after a lost lease, how long the command has between SIGTERM and SIGKILL")
	fs.StringVar(&o.note, "note", "", "a short `text` shown with the permit by status (at most 64 bytes of printable UTF-8)")
	bf.register(fs)
	if err := a.parseFlags(fs, runHead, args); err != nil {
		return err
	}
	argv := fs.Args()
	if err := o.check(argv); err != nil {
		return err
	}
	b, err := newBackend(&bf)
	if err != nil {
		return err
	}
	defer b.close()
	sem, err := b.open(o.name, o.limit, o.ttl)
	if err != nil {
		return err
	}
	defer sem.Close()

	sigs := make(chan os.Signal, len(stopSignals))
	signal.Notify(sigs, stopSignals...)
	defer signal.Stop(sigs)
	p, err := acquire(ctx, sem, &o, sigs)
	if err != nil {
		return err
	}
	code, err := a.runHolding(p, &o, argv, sigs)
	if rerr := p.ReleaseDetached(ctx, releaseTimeout); rerr != nil && !errors.Is(rerr, core.ErrNotHeld) {
		fmt.Fprintf(a.stderr, "distsem: release %s: %v (the permit comes back when its lease ends)\n", o.name, rerr)
	}
	if err != nil {
		return err
	}
	return &exitError{code: code}
}

// releaseTimeout bounds the release after the command exited.
const releaseTimeout = 5 * time.Second

func (o *runOptions) check(argv []string) error {
	switch {
	case o.limit < 1:
		return usageErrorf("run: -n must be at least 1 (got %d)", o.limit)
	case o.name == "":
		return usageErrorf("run: -name is required")
	case o.weight < 1:
		return usageErrorf("run: -weight must be at least 1 (got %d)", o.weight)
	case o.wait < 0 || o.grace < 0:
		return usageErrorf("run: -wait and -grace cannot be negative")
	case len(o.note) > core.MaxNoteLen:
		return usageErrorf("run: -note is %d bytes, over %d", len(o.note), core.MaxNoteLen)
	case len(argv) == 0:
		return usageErrorf("run: no command (distsem run -n N -name NAME -- command [argument...])")
	}
	return nil
}

// acquire waits for the permit, at most -wait, and until a signal comes.
// On failure no permit is held.
func acquire(ctx context.Context, sem semaphore, o *runOptions, sigs <-chan os.Signal) (*core.Permit, error) {
	wctx, cancel := context.WithCancel(ctx)
	if o.wait > 0 {
		wctx, cancel = context.WithTimeout(ctx, o.wait)
	}
	defer cancel()
	got := make(chan os.Signal, 1) // the signal that ended the wait, or nil
	done := make(chan struct{})
	go func() {
		var s os.Signal
		select {
		case s = <-sigs:
			cancel()
		case <-done:
		}
		got <- s
	}()
	opts := []core.AcquireOption{core.WithWeight(o.weight)}
	if o.note != "" {
		opts = append(opts, core.WithNote(o.note))
	}
	p, err := sem.Acquire(wctx, opts...)
	close(done)
	if s := <-got; s != nil { // also when the grant raced the signal
		if p != nil {
			_ = p.ReleaseDetached(ctx, releaseTimeout)
		}
		return nil, exitWithSignal(s)
	}
	if err == nil {
		return p, nil
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, &exitError{code: exitTempFail, msg: fmt.Sprintf("no permit of %s within -wait %v", o.name, o.wait)}
	}
	return nil, backendError(err)
}
