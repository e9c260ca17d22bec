package core

import (
	"testing"
	"unsafe"

	"github.com/distsem/distsem/core/internal/word"
)

// The in-process backend allocates a Permit per Acquire, and garbage
// collection costs by the byte: keep it in the 32-byte size class.
func TestPermitSize(t *testing.T) {
	if n := unsafe.Sizeof(Permit{}); n > 32 {
		t.Fatalf("Permit is %d bytes, want at most 32", n)
	}
}

// When the grant count no longer fits the state word, the state stays
// frozen: grants go through the lock and tokens keep increasing.
func TestLocalGrantCountExhausted(t *testing.T) {
	ctx := t.Context()
	s := NewLocal(2)
	s.mu.Lock()
	s.freeze()
	s.seq = word.SeqMax - 2
	s.thaw()
	s.mu.Unlock()
	var last int64
	for i := range 5 {
		p, err := s.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p.Token() <= last {
			t.Fatalf("grant %d: token %d after %d", i, p.Token(), last)
		}
		last = p.Token()
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if s.state.Load()&word.Frozen == 0 {
		t.Fatal("state thawed with the grant count at its maximum")
	}
	if st, _ := s.Stats(ctx); st != (Stats{Limit: 2}) {
		t.Fatalf("Stats = %+v", st)
	}
}

// The lock-free path holds limits below word.FreeBias, which the comment of
// core/internal/word gives as 2^19 = 524 288: a limit of 524 287 thaws the
// state word, 524 288 keeps it frozen (every call takes the mutex).
func TestLocalLockFreeLimitBound(t *testing.T) {
	if word.FreeBias != 524288 {
		t.Fatalf("word.FreeBias = %d, core/internal/word says 524 288", word.FreeBias)
	}
	for limit, frozen := range map[int64]bool{524287: false, 524288: true} {
		s := NewLocal(limit)
		p, err := s.TryAcquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got := s.state.Load()&word.Frozen != 0; got != frozen {
			t.Errorf("limit %d: frozen %v, want %v", limit, got, frozen)
		}
		if err := p.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		if st, _ := s.Stats(t.Context()); st.InUse != 0 {
			t.Errorf("limit %d: %d in use after Release", limit, st.InUse)
		}
	}
}

// A panic under the Local's lock (here the check that a release never
// frees more than the limit) must leave the lock free and the state as it
// was: net/http recovers a handler's panic, and a lock left held would
// block every later call of the process.
func TestLocalPanicLeavesLockFree(t *testing.T) {
	ctx := t.Context()
	s := NewLocal(2)
	if _, err := s.Inspect(ctx, 1); err != nil { // keeps the state frozen: every call takes the lock
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != "core: released more than held" {
				t.Fatalf("recovered %v, want the release check's panic", r)
			}
		}()
		_ = s.release(ctx, &Permit{permitExt: &s.plain, weight: 1})
	}()
	if !s.mu.TryLock() {
		t.Fatal("the lock is still held after the panic")
	}
	s.mu.Unlock()
	if st, _ := s.Stats(ctx); st != (Stats{Limit: 2}) {
		t.Fatalf("Stats = %+v after the panic, want nothing in use", st)
	}
	p, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
