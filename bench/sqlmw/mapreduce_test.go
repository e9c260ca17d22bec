package sqlmw

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/distsem/distsem/internal/servertest"
)

// BenchmarkMapReduce runs the examples/mapreduce job on PostgreSQL with a
// fleet-wide limit K (mode semaphore: sqlmw + the Redis semaphore) and
// with only a per-process SetMaxOpenConns(K/workers) (mode setmaxopen),
// and reports rows/s, the highest number of queries seen running at once
// fleet-wide, and the time spent waiting for a permit or a connection.
// Each iteration is one whole job: run it with -benchtime 1x.
func BenchmarkMapReduce(b *testing.B) {
	dsn := servertest.PostgresDSN(b)
	addr := servertest.RedisAddr(b)
	bin := filepath.Join(b.TempDir(), "mapreduce")
	// Built in its own directory (the benchmark runs in bench/sqlmw), so
	// that this works whether examples/ is part of the root module or a
	// module of its own.
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..", "examples", "mapreduce")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range []struct {
		k, workers, conc int
		slow             time.Duration
	}{
		{4, 4, 4, 50 * time.Millisecond},
		{6, 4, 4, 50 * time.Millisecond},
		{4, 8, 2, 50 * time.Millisecond},
		{4, 4, 4, 0},
	} {
		for _, mode := range []string{"semaphore", "setmaxopen"} {
			name := fmt.Sprintf("K=%d/workers=%d/conc=%d/slow=%v/%s", c.k, c.workers, c.conc, c.slow, mode)
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					id := strconv.FormatInt(time.Now().UnixNano(), 36)
					cmd := exec.Command(bin, "-driver", "pgx", "-dsn", dsn, "-redis", "redis://"+addr,
						"-table", "mr_bench_"+id, "-name", "mr-bench-"+id, "-mode", mode, "-progress", "0",
						"-rows", "200000", "-page", "2000", "-limit", strconv.Itoa(c.k),
						"-workers", strconv.Itoa(c.workers), "-concurrency", strconv.Itoa(c.conc), "-slow", c.slow.String())
					cmd.Stderr = os.Stderr
					out, err := cmd.Output()
					if err != nil {
						b.Fatalf("%v\n%s", err, out)
					}
					report(b, string(out))
				}
			})
		}
	}
}

var (
	reThroughput = regexp.MustCompile(`throughput\s+([0-9.]+) rows/s`)
	reMax        = regexp.MustCompile(`max in flight\s+(\d+)`)
	rePermit     = regexp.MustCompile(`permit wait\s+(\S+) total`)
	rePool       = regexp.MustCompile(`pool wait\s+(\S+) total`)
)

func report(b *testing.B, out string) {
	b.Helper()
	num := func(re *regexp.Regexp) float64 {
		m := re.FindStringSubmatch(out)
		if m == nil {
			return 0
		}
		if d, err := time.ParseDuration(m[1]); err == nil {
			return d.Seconds()
		}
		f, _ := strconv.ParseFloat(m[1], 64)
		return f
	}
	if reThroughput.FindStringSubmatch(out) == nil {
		b.Fatalf("no throughput in:\n%s", out)
	}
	b.ReportMetric(num(reThroughput), "rows/s")
	b.ReportMetric(num(reMax), "max-in-flight")
	b.ReportMetric(num(rePermit)+num(rePool), "wait-s")
	b.ReportMetric(0, "ns/op")
}
