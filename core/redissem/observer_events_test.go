package redissem_test

import (
	"context"
	"sync"
	"testing"

	"github.com/distsem/distsem/core"
)

func TestObserverEvents(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			var mu sync.Mutex
			kinds := map[core.EventKind]int{}
			queued := make(chan struct{}, 1)
			obs := core.ObserverFunc(func(e core.Event) {
				mu.Lock()
				kinds[e.Kind]++
				mu.Unlock()
				if e.Kind == core.EventWait {
					queued <- struct{}{}
				}
			})
			s := b.new(t, 1, optObserver(obs))
			ctx := context.Background()
			p := acquire(t, s)
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { _, _ = s.Acquire(cctx); close(done) }()
			// The Acquire knows it is queued (a cancel before its reply
			// came back would report no wait at all).
			<-queued
			cancel()
			<-done
			ok(t, p.Release(ctx))
			mu.Lock()
			defer mu.Unlock()
			want := map[core.EventKind]int{core.EventAcquired: 1, core.EventWait: 1, core.EventAbandoned: 1, core.EventReleased: 1}
			for k, n := range want {
				if kinds[k] != n {
					t.Fatalf("%v events = %d, want %d (all: %v)", k, kinds[k], n, kinds)
				}
			}
		})
	}
}
