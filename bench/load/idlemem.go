package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// idleResult is the JSON line of `load idlemem`.
type idleResult struct {
	Label     string  `json:"label"`
	Backend   string  `json:"backend"`
	Sems      int     `json:"sems"`
	IdleBytes float64 `json:"idle_bytes"` // Redis used_memory per idle semaphore
	IdleKeys  float64 `json:"idle_keys"`  // keys per idle semaphore
}

// idlemem measures what one idle semaphore costs Redis: it acquires and
// releases each of -n semaphores once, one after the other, and divides
// the growth of used_memory and of DBSIZE by n. The client is connected
// and the scripts are loaded (one warm-up semaphore) before the first
// sample, so neither counts.
func idlemem(args []string) error {
	fs := flag.NewFlagSet("idlemem", flag.ExitOnError)
	var c config
	fs.StringVar(&c.backend, "backend", "distsem", "distsem | seedsem | redsync | redislock")
	fs.StringVar(&c.addr, "redis", "127.0.0.1:7460", "redis-server address (loopback only)")
	n := fs.Int("n", 1000, "semaphores")
	results := fs.String("results", "", "append a JSON line to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c.name = fmt.Sprintf("idle-%s-%d", c.backend, time.Now().UnixNano())
	c.limit, c.procs, c.workers, c.childGors, c.lease = 1, 1, 1, 1, 10*time.Second
	c.sems = *n + 1
	if c.backend == "local" || c.backend == "xsync" || c.backend == "leased" || !strings.HasPrefix(c.addr, "127.0.0.1:") {
		return fmt.Errorf("idlemem: -backend %s -redis %s: a Redis backend on loopback only", c.backend, c.addr)
	}
	sem, closeFn, err := openBackend(c)
	if err != nil {
		return err
	}
	defer closeFn()
	defer cleanup(c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl := redis.NewClient(&redis.Options{Addr: c.addr})
	defer cl.Close()
	once := func(i int) error {
		g, err := sem.acquire(ctx, i)
		if err != nil {
			return err
		}
		return g.release(ctx)
	}
	if err := once(*n); err != nil { // warm-up: connections, scripts
		return err
	}
	m0, k0, err := memKeys(ctx, cl)
	if err != nil {
		return err
	}
	for i := range *n {
		if err := once(i); err != nil {
			return err
		}
	}
	m1, k1, err := memKeys(ctx, cl)
	if err != nil {
		return err
	}
	r := idleResult{Label: "idlemem", Backend: c.backend, Sems: *n,
		IdleBytes: float64(m1-m0) / float64(*n), IdleKeys: float64(k1-k0) / float64(*n)}
	fmt.Printf("idle semaphore, %s: %.0f bytes of used_memory, %.2f keys (%d semaphores)\n", r.Backend, r.IdleBytes, r.IdleKeys, *n)
	if *results == "" {
		return nil
	}
	f, err := os.OpenFile(*results, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(r)
	_, err = fmt.Fprintf(f, "%s\n", b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// memKeys returns Redis's used_memory and DBSIZE.
func memKeys(ctx context.Context, cl *redis.Client) (mem, keys int64, err error) {
	info, err := cl.Info(ctx, "memory").Result()
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			mem, err = strconv.ParseInt(v, 10, 64)
		}
	}
	if err != nil {
		return 0, 0, err
	}
	keys, err = cl.DBSize(ctx).Result()
	return mem, keys, err
}
