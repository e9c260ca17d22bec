package redissem_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
)

// quorumChildEnv makes this test binary a quorum worker process (see
// quorumChild); init runs it before TestMain, so no other file changes.
const quorumChildEnv = "DISTSEM_QUORUM_CHILD"

func init() {
	if os.Getenv(quorumChildEnv) != "" {
		os.Exit(quorumChild())
	}
}

// quorumChild runs WORKERS goroutines that each take the quorum permit
// ITERS times and print one line per grant: "G <from ns> <to ns> <token>",
// or "E <error>" when an Acquire fails.
func quorumChild() int {
	var cs []redis.UniversalClient
	for _, a := range strings.Split(os.Getenv("MASTERS"), ",") {
		c := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 3 * time.Second})
		defer c.Close()
		cs = append(cs, c)
	}
	workers, _ := strconv.Atoi(os.Getenv("WORKERS"))
	iters, _ := strconv.Atoi(os.Getenv("ITERS"))
	q := redissem.NewQuorum(cs, "mp", 1, redissem.WithKeyPrefix(os.Getenv("PREFIX")), redissem.WithDefaultLeaseTTL(1500*time.Millisecond))
	defer q.Close()
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range iters {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				p, err := q.Acquire(ctx)
				cancel()
				if err != nil {
					mu.Lock()
					fmt.Fprintf(out, "E %v\n", err)
					out.Flush()
					mu.Unlock()
					return
				}
				from := time.Now()
				time.Sleep(time.Millisecond) // the work the permit protects
				to := time.Now()
				_ = p.Release(context.Background())
				mu.Lock()
				fmt.Fprintf(out, "G %d %d %d\n", from.UnixNano(), to.UnixNano(), p.Token())
				out.Flush()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return 0
}

// TestQuorumMultiProcess runs three worker processes through a quorum lock
// (limit 1) on 3 masters while one master is killed, stalled or restarted
// empty after a lease TTL. On the timeline the processes record, holders
// never overlap, and tokens strictly increase in the order of the grants:
// a later holder shares a master with every earlier one, whose token
// counter the earlier holder raised.
func TestQuorumMultiProcess(t *testing.T) {
	for _, fault := range []string{"kill", "stall", "restart"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			quorumMultiProcess(t, fault)
		})
	}
}

func quorumMultiProcess(t *testing.T, fault string) {
	const procs, workers, iters = 3, 2, 10
	ms := masters(t, 3)
	var addrs []string
	for _, m := range ms {
		addrs = append(addrs, m.Addr())
	}
	prefix := uniquePrefix(t)
	type grant struct{ from, to, token int64 }
	lines := make(chan string)
	var readers sync.WaitGroup
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), quorumChildEnv+"=1", "MASTERS="+strings.Join(addrs, ","),
			"PREFIX="+prefix, fmt.Sprintf("WORKERS=%d", workers), fmt.Sprintf("ITERS=%d", iters))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		ok(t, err)
		ok(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		readers.Go(func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
		})
	}
	go func() { readers.Wait(); close(lines) }()

	var grants []grant
	var faults sync.WaitGroup
	defer faults.Wait()
	for l := range lines {
		if msg, found := strings.CutPrefix(l, "E "); found {
			t.Errorf("Acquire with a majority up: %s", msg)
			continue
		}
		var g grant
		if _, err := fmt.Sscanf(l, "G %d %d %d", &g.from, &g.to, &g.token); err != nil {
			t.Fatalf("bad line %q: %v", l, err)
		}
		grants = append(grants, g)
		if len(grants) == procs*workers*iters/4 {
			switch fault {
			case "kill":
				ms[0].Kill()
			case "restart":
				ms[0].Kill()
				faults.Go(func() {
					time.Sleep(2 * time.Second) // the fault model: down for longer than a lease (1.5s)
					ms[0].Restart()
				})
			case "stall":
				c := redis.NewClient(&redis.Options{Addr: ms[0].Addr(), ReadTimeout: 5 * time.Second})
				faults.Go(func() {
					defer c.Close()
					_ = c.Do(context.Background(), "DEBUG", "SLEEP", "1").Err()
				})
			}
		}
	}
	if len(grants) != procs*workers*iters {
		t.Fatalf("%d grants, want %d", len(grants), procs*workers*iters)
	}
	slices.SortFunc(grants, func(a, b grant) int { return int(a.from - b.from) })
	for i := 1; i < len(grants); i++ {
		a, b := grants[i-1], grants[i]
		if b.from < a.to {
			t.Fatalf("two holders of a limit of 1 at once: [%d, %d] and [%d, %d]", a.from, a.to, b.from, b.to)
		}
		if b.token <= a.token {
			t.Fatalf("grant %d has token %d after token %d: fencing would refuse a valid holder", i, b.token, a.token)
		}
	}
	faults.Wait()
	up := []bool{fault != "kill", true, true}
	wantMastersEmpty(t, clientsOf(t, ms), up, prefix, "mp")
}
