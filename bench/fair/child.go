package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

// record is one grant as a worker saw it (Unix nanoseconds).
type record struct {
	Proc     int    `json:"p"`
	Gor      int    `json:"g"`
	Flow     string `json:"f"`
	Level    int    `json:"l"`
	AcqStart int64  `json:"a"`
	Grant    int64  `json:"gr"`
	RelStart int64  `json:"rs"`
	RelDone  int64  `json:"rd"`
}

// child runs process c.child of the scenario: it says "ready", reads the
// start instant from stdin, runs until start + duration, writes its grants
// to c.out as JSON lines, and prints its heap in use.
func child(c config, sc scenario) error {
	rdb := redis.NewClient(&redis.Options{Addr: c.addr, PoolSize: 64})
	defer rdb.Close()
	sem := redissem.New(rdb, c.name, sc.Limit)
	defer sem.Close()
	fmt.Println("ready")
	var start int64
	if _, err := fmt.Fscan(os.Stdin, &start); err != nil {
		return fmt.Errorf("reading the start instant: %w", err)
	}
	end := start + int64(c.duration)
	time.Sleep(time.Until(time.Unix(0, start)))

	var (
		mu      sync.Mutex
		records []record
		errs    atomic.Int64
		seq     atomic.Int64
		wg      sync.WaitGroup
	)
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, end))
	defer cancel()
	one := func(gor int, g group) {
		opts := []core.AcquireOption{}
		if !c.fifo {
			flow := g.Flow
			if g.Unique {
				flow += "-" + strconv.Itoa(c.child) + "-" + strconv.FormatInt(seq.Add(1), 10)
			}
			opts = append(opts, core.WithFlow(flow), core.WithLevel(g.Level))
		}
		r := record{Proc: c.child, Gor: gor, Flow: g.Flow, Level: g.Level, AcqStart: time.Now().UnixNano()}
		p, err := sem.Acquire(ctx, opts...)
		if err != nil {
			if ctx.Err() == nil {
				errs.Add(1)
				return
			}
			mu.Lock()
			records = append(records, r) // still waiting at the end: Grant 0
			mu.Unlock()
			return
		}
		r.Grant = time.Now().UnixNano()
		time.Sleep(sc.Hold)
		r.RelStart = time.Now().UnixNano()
		if err := p.Release(context.Background()); err != nil {
			errs.Add(1)
		}
		r.RelDone = time.Now().UnixNano()
		mu.Lock()
		records = append(records, r)
		mu.Unlock()
	}
	gor := 0
	for _, g := range sc.Procs[c.child] {
		stop := end
		if g.Stop > 0 {
			stop = start + int64(g.Stop*float64(c.duration))
		}
		if g.Every > 0 {
			id := gor
			gor++
			wg.Go(func() {
				t := time.NewTicker(g.Every)
				defer t.Stop()
				for n := 0; ; n++ {
					select {
					case <-ctx.Done():
						return
					case now := <-t.C:
						if now.UnixNano() >= stop {
							return
						}
						wg.Go(func() { one(id*100000+n, g) })
					}
				}
			})
			continue
		}
		for range g.Gors {
			id := gor
			gor++
			wg.Go(func() {
				for time.Now().UnixNano() < stop && ctx.Err() == nil {
					one(id, g)
				}
			})
		}
	}
	wg.Wait()
	f, err := os.Create(c.out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("heap %d errors %d\n", ms.HeapInuse, errs.Load())
	return f.Close()
}
