package redissem_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// runAdoptChild is the child side of the tests below. "adopt": adopt the
// permit PERMIT_ID, optionally set its lease to SET_TTL, print "adopted ID
// weight token grant_us", then on the line "release" from stdin release it
// and print "released <lost> <error or ok>". "releaseid": release PERMIT_ID
// by id and print "released <error or ok>".
func runAdoptChild(mode string, s *redissem.Semaphore) int {
	ctx := context.Background()
	id := os.Getenv("PERMIT_ID")
	if mode == "releaseid" {
		fmt.Println("released", errWord(s.ReleaseID(ctx, id)))
		return 0
	}
	p, err := s.Adopt(ctx, id)
	if err != nil {
		fmt.Fprintln(os.Stderr, "adopt child:", err)
		return 1
	}
	if d := os.Getenv("SET_TTL"); d != "" {
		ttl, _ := time.ParseDuration(d)
		if err := p.SetLeaseTTL(ctx, ttl); err != nil {
			fmt.Fprintln(os.Stderr, "adopt child:", err)
			return 1
		}
	}
	fmt.Println("adopted", p.ID(), p.Weight(), p.Token(), p.GrantedAt().UnixMicro())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "release" {
			lost := false
			select {
			case <-p.Lost():
				lost = true
			default:
			}
			fmt.Println("released", lost, errWord(p.Release(ctx)))
			return 0
		}
	}
	return 1
}

func errWord(err error) string {
	if err == nil {
		return "ok"
	}
	return strings.ReplaceAll(err.Error(), " ", "_")
}

// startAdoptChild is startChild with a pipe to the child's stdin.
func startAdoptChild(t *testing.T, mode string, env ...string) (*exec.Cmd, *bufio.Scanner, *os.File) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, childEnv+"="+mode, "DISTSEM_REDIS_ADDR="+servertest.RedisAddr(t))...)
	cmd.Stderr = os.Stderr
	r, w, err := os.Pipe()
	ok(t, err)
	cmd.Stdin = r
	out, err := cmd.StdoutPipe()
	ok(t, err)
	ok(t, cmd.Start())
	_ = r.Close()
	t.Cleanup(func() { _ = w.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewScanner(out), w
}

// TestMultiProcessAdopt: this process acquires and passes the permit's id
// to a child, which adopts it, lengthens its lease, renews it long past the
// original lease and releases it. Here the permit reports Lost and its
// Release ErrNotHeld; the capacity is taken while the child holds it and
// free after.
func TestMultiProcessAdopt(t *testing.T) {
	const ttl = 300 * time.Millisecond
	prefix := uniquePrefix(t)
	c := realClient(t)
	s := redissem.New(c, "mpadopt", 3, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(ttl))
	defer s.Close()
	ctx := context.Background()
	pa := acquire(t, s, core.WithWeight(2))
	cmd, sc, in := startAdoptChild(t, "adopt", "PREFIX="+prefix, "NAME=mpadopt", "LIMIT=3",
		"TTL="+ttl.String(), "PERMIT_ID="+pa.ID(), "SET_TTL=1s")
	if !sc.Scan() {
		t.Fatal("the child did not adopt the permit")
	}
	f := strings.Fields(sc.Text())
	if len(f) != 5 || f[0] != "adopted" {
		t.Fatalf("child said %q", sc.Text())
	}
	idB := f[1]
	w, _ := strconv.ParseInt(f[2], 10, 64)
	tok, _ := strconv.ParseInt(f[3], 10, 64)
	at, _ := strconv.ParseInt(f[4], 10, 64)
	if idB == pa.ID() || w != 2 || tok != pa.Token() || at != pa.GrantedAt().UnixMicro() {
		t.Fatalf("child adopted %q weight %d token %d at %d; want a new id, %d %d %d",
			idB, w, tok, at, pa.Weight(), pa.Token(), pa.GrantedAt().UnixMicro())
	}
	lostWithin(t, pa, "the permit adopted by another process")
	if err := pa.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Release of the adopted-away permit: %v, want ErrNotHeld", err)
	}
	// The child renews with its new 1s TTL, every ~333ms, long past the
	// original 300ms lease.
	if left := leaseLeft(t, c, prefix, "mpadopt", idB); left < 500*time.Millisecond {
		t.Fatalf("the child's lease has %v left, want about 1s after SetLeaseTTL", left)
	}
	waitRenewals(t, c, prefix, "mpadopt", idB, 3)
	if left := leaseLeft(t, c, prefix, "mpadopt", idB); left < 500*time.Millisecond {
		t.Fatalf("the child's lease has %v left after its renewals, want about 1s", left)
	}
	wantStats(t, s, 2, 0)
	if _, err := s.TryAcquire(ctx, core.WithWeight(2)); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("TryAcquire of the capacity the child holds: %v, want ErrNoPermit", err)
	}
	_, err := fmt.Fprintln(in, "release")
	ok(t, err)
	if !sc.Scan() || sc.Text() != "released false ok" {
		t.Fatalf("child's release: %q, want \"released false ok\"", sc.Text())
	}
	ok(t, cmd.Wait())
	wantStats(t, s, 0, 0)
	p := tryAcquireW(t, s, 3)
	ok(t, p.Release(ctx))
}

// TestMultiProcessReleaseID: a child that holds nothing releases this
// process's permit by id; the waiter queued here gets it, and the holder
// sees Lost.
func TestMultiProcessReleaseID(t *testing.T) {
	prefix := uniquePrefix(t)
	s := redissem.New(realClient(t), "mprel", 1, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(time.Second))
	defer s.Close()
	ctx := context.Background()
	pa := acquire(t, s)
	got := make(chan *core.Permit, 1)
	go func() {
		p, err := s.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- p
	}()
	waitQueued(t, s, 1)
	cmd, sc, _ := startAdoptChild(t, "releaseid", "PREFIX="+prefix, "NAME=mprel", "LIMIT=1", "TTL=1s", "PERMIT_ID="+pa.ID())
	if !sc.Scan() || sc.Text() != "released ok" {
		t.Fatalf("child's ReleaseID: %q, want \"released ok\"", sc.Text())
	}
	ok(t, cmd.Wait())
	var pw *core.Permit
	select {
	case pw = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not granted the permit released by the child")
	}
	if pw == nil {
		t.FailNow()
	}
	lostWithin(t, pa, "the permit released by another process")
	if err := pa.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Release: %v, want ErrNotHeld", err)
	}
	ok(t, pw.Release(ctx))
	wantStats(t, s, 0, 0)
}

func tryAcquireW(t *testing.T, s *redissem.Semaphore, w int64) *core.Permit {
	t.Helper()
	p, err := s.TryAcquire(context.Background(), core.WithWeight(w))
	ok(t, err)
	return p
}
