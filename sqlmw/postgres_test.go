package sqlmw_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/sqlmw"
)

// The PostgreSQL check runs the test binary again as worker processes;
// pgWorkerEnv selects worker mode and carries its settings.
const pgWorkerEnv = "DISTSEM_SQLMW_PG_WORKER"

const (
	pgProcs      = 3
	pgGoroutines = 3
	pgQueries    = 2
	pgLimit      = 2
	pgSleep      = 0.1 // seconds per query
)

// pgWorker runs pgGoroutines × pgQueries tagged pg_sleep queries, through
// the wrapper ("wrapped") or not ("raw"). cfg is "mode tag semName".
func pgWorker(cfg string) error {
	var mode, tag, name string
	if _, err := fmt.Sscan(cfg, &mode, &tag, &name); err != nil {
		return err
	}
	dsn := os.Getenv("DISTSEM_POSTGRES_DSN")
	var db *sql.DB
	var err error
	if mode == "wrapped" {
		client := redis.NewClient(&redis.Options{Addr: os.Getenv("DISTSEM_REDIS_ADDR")})
		defer client.Close()
		sem := redissem.New(client, name, pgLimit)
		defer sem.Close()
		db, err = sqlmw.Open("pgx", dsn, sem)
	} else {
		db, err = sql.Open("pgx", dsn)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	query := fmt.Sprintf("/* %s */ SELECT pg_sleep(%g)", tag, pgSleep)
	var wg sync.WaitGroup
	errs := make(chan error, pgGoroutines)
	for range pgGoroutines {
		wg.Go(func() {
			for range pgQueries {
				if _, err := db.ExecContext(context.Background(), query); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// TestPostgresLimit checks the limit from the database's side: several
// processes share one Redis semaphore of pgLimit permits, and a separate
// connection samples pg_stat_activity. Without the wrapper the same load
// must exceed the limit, or the check proves nothing.
func TestPostgresLimit(t *testing.T) {
	dsn := servertest.PostgresDSN(t)
	servertest.RedisAddr(t)
	sampler, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer sampler.Close()
	if err := sampler.PingContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	run := func(mode string) int {
		tag := fmt.Sprintf("distsem-pgtest-%d-%d", os.Getpid(), time.Now().UnixNano())
		name := "sqlmw-pgtest-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		return runPgWorkers(t, sampler, mode, tag, name)
	}
	if got := run("wrapped"); got > pgLimit || got < 1 {
		t.Errorf("through the wrapper: at most %d tagged queries active, want 1..%d", got, pgLimit)
	} else {
		t.Logf("through the wrapper: at most %d active (limit %d)", got, pgLimit)
	}
	if got := run("raw"); got <= pgLimit {
		t.Errorf("without the wrapper: at most %d active, want > %d: the check cannot fail", got, pgLimit)
	} else {
		t.Logf("without the wrapper: at most %d active", got)
	}
}

// runPgWorkers starts the workers and returns the highest number of their
// queries seen active in pg_stat_activity.
func runPgWorkers(t *testing.T, sampler *sql.DB, mode, tag, name string) int {
	t.Helper()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	done := make(chan error, pgProcs)
	for range pgProcs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), pgWorkerEnv+"="+mode+" "+tag+" "+name)
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
		go func() { done <- cmd.Wait() }()
	}
	const q = `SELECT count(*) FROM pg_stat_activity
		WHERE state = 'active' AND backend_type = 'client backend'
		AND pid <> pg_backend_pid() AND strpos(query, $1) > 0`
	maxSeen, finished := 0, 0
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for finished < pgProcs {
		select {
		case err := <-done:
			finished++
			if err != nil {
				for i, c := range cmds {
					t.Logf("worker %d (%v): %s", i, c.ProcessState, outs[i])
				}
				t.Fatalf("%s worker failed: %v", mode, err)
			}
		case <-tick.C:
			var n int
			if err := sampler.QueryRowContext(t.Context(), q, tag).Scan(&n); err != nil {
				t.Fatal(err)
			}
			maxSeen = max(maxSeen, n)
		}
	}
	return maxSeen
}
