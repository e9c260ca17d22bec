package main

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/internal/testwait"
)

// status -json reports the limit, the permits in use and the waiters,
// and changes nothing (a name never used stays unknown); set-limit
// raises the limit for every process, so the waiter is granted.
func TestStatusJSONAndSetLimit(t *testing.T) {
	t.Parallel()
	url := redisURL(t)
	name, prefix := uniqueName()
	sem, _ := testSem(t, name, prefix, 3)
	ctx := context.Background()
	hold(t, sem, core.WithWeight(2), core.WithNote("nightly backup"))
	granted := make(chan *core.Permit, 1)
	go func() {
		q, _ := sem.Acquire(ctx, core.WithWeight(2))
		granted <- q
	}()
	testwait.Until(t, 10*time.Second, "the second Acquire never queued", func() bool {
		st, err := sem.Stats(ctx)
		return err == nil && st.Waiting == 1
	})

	status := func() []jsonState {
		t.Helper()
		cmd, stdout, stderr := distsem(t, "status", "-json", "-redis", url, "-prefix", prefix, name, "unused")
		if code := exitCode(t, cmd); code != 0 {
			t.Fatalf("status exited %d: %s", code, stderr)
		}
		var got []jsonState
		if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
			t.Fatalf("status -json printed %q: %v", stdout, err)
		}
		return got
	}
	got := status()
	want := []jsonState{{Name: name, Stored: true, Limit: 3, InUse: 2, Waiting: 1}, {Name: "unused"}}
	if len(got) != 2 || counts(got[0]) != want[0] || got[1] != want[1] {
		t.Fatalf("status -json: %+v, want %+v", got, want)
	}
	if got[0].Holders == nil || len(*got[0].Holders) != 1 || got[0].Waiters == nil || len(*got[0].Waiters) != 1 {
		t.Fatalf("status -json lists %+v and %+v, want one holder and one waiter", got[0].Holders, got[0].Waiters)
	}
	if h := (*got[0].Holders)[0]; h.Weight != 2 || h.Note != "nightly backup" || h.Owner != core.DefaultOwner() || h.Token <= 0 {
		t.Errorf("the holder: %+v, want weight 2, the note, owner %q and a token", h, core.DefaultOwner())
	}
	if w := (*got[0].Waiters)[0]; w.Position != 0 || w.Weight != 2 {
		t.Errorf("the waiter: %+v, want the head, weight 2", w)
	}

	cmd, _, stderr := distsem(t, "set-limit", "-redis", url, "-prefix", prefix, name, "4")
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("set-limit exited %d: %s", code, stderr)
	}
	q := <-granted
	if q == nil {
		t.Fatal("the waiter was not granted after set-limit")
	}
	defer q.Release(ctx)
	got = status()
	want[0] = jsonState{Name: name, Stored: true, Limit: 4, InUse: 4}
	if len(got) != 2 || counts(got[0]) != want[0] || got[1] != want[1] {
		t.Fatalf("status -json after set-limit: %+v, want %+v", got, want)
	}
}

// counts is s without its lists.
func counts(s jsonState) jsonState {
	s.Holders, s.Waiters = nil, nil
	return s
}

// The table lists the holders and waiters under the counts.
func TestStatusTable(t *testing.T) {
	t.Parallel()
	url := redisURL(t)
	name, prefix := uniqueName()
	testSem(t, name, prefix, 2)
	cmd, _, _ := distsem(t, "set-limit", "-redis", url, "-prefix", prefix, name, "5")
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("set-limit exited %d", code)
	}
	cmd, stdout, stderr := distsem(t, "status", "-redis", url, "-prefix", prefix, name)
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("status exited %d: %s", code, stderr)
	}
	want := "NAME" + strings.Repeat(" ", len(name)-2) + "LIMIT  IN USE  WAITING\n" +
		name + "  5      0       0\n\n" +
		name + " holders:\nID  WEIGHT  TOKEN  GRANTED  LEASE END  OWNER  NOTE\n\n" +
		name + " waiters:\nPOS  WEIGHT  SINCE  OWNER  NOTE\n"
	if stdout.String() != want {
		t.Fatalf("status printed\n%s\nwant\n%s", stdout, want)
	}
}

// Off a terminal, watch prints a line when the state changes, and ends
// with status 0 on SIGTERM.
func TestWatchPrintsChanges(t *testing.T) {
	t.Parallel()
	url := redisURL(t)
	name, prefix := uniqueName()
	sem, _ := testSem(t, name, prefix, 2)
	p := hold(t, sem)
	cmd, _, stderr := distsem(t, "watch", "-interval", "20ms", "-redis", url, "-prefix", prefix, name)
	cmd.Stdout = nil
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	next := func(want string) {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("watch ended (%v) before %q; stderr: %s", lines.Err(), want, stderr)
		}
		if !strings.HasSuffix(lines.Text(), " "+want) {
			t.Fatalf("watch printed %q, want a time and %q", lines.Text(), want)
		}
	}
	next(name + " limit=2 in_use=1 waiting=0")
	if err := p.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	next(name + " limit=2 in_use=0 waiting=0")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
	}
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("watch exited %d on SIGTERM: %s", code, stderr)
	}
}
