package core_test

import (
	"context"
	"slices"
	"testing"

	"github.com/distsem/distsem/core"
)

// Observers passes every event to each observer, in order, and skips nil
// ones; a semaphore given it reports to all of them.
func TestObserversPassEveryEventToEach(t *testing.T) {
	var got []string
	record := func(who string) core.Observer {
		return core.ObserverFunc(func(e core.Event) { got = append(got, who+":"+e.Kind.String()) })
	}
	sem := core.NewLocal(1, core.WithObserver(core.Observers(record("a"), nil, record("b"))))
	p, err := sem.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"a:acquired", "b:acquired", "a:released", "b:released"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}
