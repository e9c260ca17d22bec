package consul_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/distsem/distsem/core"
)

// The observer sees the same events as on the other backends: a grant
// with or without waiting, a wait, an abandoned wait, a release.
func TestObserverEvents(t *testing.T) {
	ctx := background()
	var mu sync.Mutex
	var kinds []core.EventKind
	waiting := make(chan struct{}, 1)
	s := newSem(t, 1, core.WithObserver(core.ObserverFunc(func(e core.Event) {
		mu.Lock()
		kinds = append(kinds, e.Kind)
		mu.Unlock()
		if e.Kind == core.EventWait {
			waiting <- struct{}{}
		}
	})))
	p, err := s.TryAcquire(ctx)
	ok(t, err)
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := s.Acquire(cctx); errc <- err }()
	<-waiting // the Acquire knows it is queued (not only Consul)
	cancel()
	<-errc
	ok(t, p.Release(ctx))
	mu.Lock()
	defer mu.Unlock()
	want := []core.EventKind{core.EventAcquired, core.EventWait, core.EventAbandoned, core.EventReleased}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
}
