package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"time"

	"golang.org/x/term"
)

const watchHead = `Usage: distsem watch [flags] NAME

Shows the state of the semaphore NAME, read every -interval, until SIGINT
or SIGTERM (then it exits 0). On a terminal it redraws the status table in
place. Otherwise it prints a line when the state changes, and the first:
  2026-01-02T15:04:05.000Z jobs limit=4 in_use=2 waiting=1
A read that fails prints "error=..." in the same way, and watch goes on.
`

func (a *app) watchCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("watch")
	var bf backendFlags
	interval := fs.Duration("interval", time.Second, "how often to read the state")
	bf.register(fs)
	if err := a.parseFlags(fs, watchHead, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("watch: want one NAME, got %d arguments (distsem watch [flags] NAME)", fs.NArg())
	}
	if *interval <= 0 {
		return usageErrorf("watch: -interval must be positive")
	}
	b, err := newBackend(&bf)
	if err != nil {
		return err
	}
	defer b.close()
	ctx, stop := signal.NotifyContext(ctx, stopSignals...)
	defer stop()

	in := newInspector(b)
	show := a.lineView()
	if f, ok := a.stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		show = a.screenView(*interval)
	}
	t := time.NewTicker(*interval)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, opTimeout)
		st, err := in.inspect(rctx, fs.Arg(0))
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		var e *exitError
		if errors.As(err, &e) {
			return err // a usage error: no read can succeed
		}
		show(st, err)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// lineView prints a line when the state or the error changes.
func (a *app) lineView() func(state, error) {
	last := ""
	return func(st state, err error) {
		line := fmt.Sprintf("%s limit=%d in_use=%d waiting=%d", st.Name, st.Limit, st.InUse, st.Waiting)
		switch {
		case err != nil:
			line = fmt.Sprintf("%s error=%q", st.Name, err.Error())
		case !st.Stored:
			line += " no state"
		}
		if line != last {
			last = line
			fmt.Fprintf(a.stdout, "%s %s\n", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), line)
		}
	}
}

// screenView clears the terminal and draws the status table.
func (a *app) screenView(every time.Duration) func(state, error) {
	return func(st state, err error) {
		fmt.Fprint(a.stdout, "\x1b[H\x1b[2J") // cursor home, clear the screen
		fmt.Fprintf(a.stdout, "%s, every %v; Ctrl-C ends\n\n", time.Now().Format("15:04:05"), every)
		if err != nil {
			fmt.Fprintf(a.stdout, "error: %v\n", err)
			return
		}
		writeTable(a.stdout, []state{st})
	}
}
