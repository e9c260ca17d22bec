package redissem_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// A lost permit is reported to the observer before its Lost channel
// closes, so that an observer that joins the caller's trace sees the event
// while the caller still waits on Lost: whether Close ends the lease (in
// both modes), or a renewal finds it gone.
func TestLostEventComesBeforeLost(t *testing.T) {
	srv := servertest.StartRedis(t)
	for _, how := range []string{"close", "renewal", "leased-close"} {
		t.Run(how, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			defer c.Close()
			lostAtEvent := make(chan bool, 1)
			var lost <-chan struct{}
			obs := core.ObserverFunc(func(e core.Event) {
				if e.Kind != core.EventLost {
					return
				}
				select {
				case <-lost:
					lostAtEvent <- true
				default:
					lostAtEvent <- false
				}
			})
			name := "lost-order-" + how
			opts := []redissem.Option{redissem.WithObserver(obs), redissem.WithDefaultLeaseTTL(300 * time.Millisecond)}
			var sem interface {
				core.Semaphore
				Close() error
			}
			if how == "leased-close" {
				sem = redissem.NewLeased(c, name, 1, opts...)
			} else {
				sem = redissem.New(c, name, 1, opts...)
			}
			defer sem.Close()
			p, err := sem.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			lost = p.Lost()
			if how != "renewal" {
				if err := sem.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				// Another process releases it by id: the next renewal
				// finds the lease gone.
				other := redissem.New(c, name, 1)
				defer other.Close()
				if err := other.ReleaseID(context.Background(), p.ID()); err != nil {
					t.Fatal(err)
				}
			}
			if <-lostAtEvent {
				t.Fatal("Lost was closed before the observer saw EventLost")
			}
			<-lost
		})
	}
}
