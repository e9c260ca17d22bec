package consul_test

import (
	"context"
	"testing"

	"github.com/distsem/distsem/core"
)

// A permit lost at Close is reported to the observer before its Lost
// channel closes, so that an observer that joins the caller's trace sees
// the event while the caller still waits on Lost.
func TestLostEventComesBeforeLost(t *testing.T) {
	lostAtEvent := make(chan bool, 1)
	var lost <-chan struct{}
	sem := newSem(t, 1, core.WithObserver(core.ObserverFunc(func(e core.Event) {
		if e.Kind != core.EventLost {
			return
		}
		select {
		case <-lost:
			lostAtEvent <- true
		default:
			lostAtEvent <- false
		}
	})))
	p, err := sem.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lost = p.Lost()
	if err := sem.Close(); err != nil {
		t.Fatal(err)
	}
	if <-lostAtEvent {
		t.Fatal("Lost was closed before the observer saw EventLost")
	}
	<-lost
}
