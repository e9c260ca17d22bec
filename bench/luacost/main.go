// Command luacost measures the server time of Lua script variants on a real
// redis-server: each variant is a sequence of scripts (steps) run back to
// back with EVALSHA, with the KEYS and ARGV of distsem's uncontended acquire
// and release (or bench/seedsem's, or bench/refsem's). Between variants it resets
// INFO commandstats and SLOWLOG, so that each variant's figures are its own:
// usec_per_call of EVALSHA and of every nested command, and (from SLOWLOG at
// threshold 0) the server µs of each step, as the mean of its fastest 90% of
// calls (robust to the server being preempted on a shared machine). It also
// times each measured run: with -pipe 1 (one round trip per script, one
// connection, no library around the call), iterations per second is the
// uncontended pair rate that the scripts alone allow. Variants are
// interleaved in several rounds (each round starts one variant later);
// medians and ranges are reported.
// Only relative figures within one run mean anything on a shared machine.
//
//	go run ./luacost -start -port 7450 -rounds 7 -n 2000 \
//	    -v 'main=acq:../core/lua/lib.lua+../core/lua/acquire.lua,rel:../core/lua/lib.lua+../core/lua/release.lua' \
//	    -v 'empty=acq:luacost/variants/empty.lua,rel:luacost/variants/empty.lua'
//
// A step is role:file[+file...] (the files are concatenated, as
// core/scripts.go prepends lib.lua). Roles: acq and rel (distsem's 6 keys,
// ARGV limit, channel, id, ...), sacq and srel (bench/seedsem's keys and ARGV),
// racq and rrel (bench/refsem's).
// facq and frel FCALL the functions luacost_acq and luacost_rel of a
// function library (FUNCTION LOAD REPLACE; variants/fcall/build.sh makes
// one from core/lua), with acq's and rel's KEYS and ARGV.
// -f reads variants from a file, one name=steps a line (# comments).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

type step struct {
	role, files, sha string
}

type variant struct {
	name  string
	steps []step
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

func main() {
	var specs multi
	flag.Var(&specs, "v", "variant name=role:file[+file],role:file... (repeatable)")
	vfile := flag.String("f", "", "file of variants, one name=steps a line")
	addr := flag.String("addr", "", "redis-server address (default 127.0.0.1:<port>)")
	start := flag.Bool("start", false, "start redis-server on 127.0.0.1:<port> and stop it at the end")
	port := flag.Int("port", 7450, "port for -start")
	n := flag.Int("n", 2000, "measured iterations per variant and round")
	warm := flag.Int("warm", 200, "unmeasured iterations before each measurement")
	rounds := flag.Int("rounds", 5, "rounds (variants interleaved in each)")
	pipe := flag.Int("pipe", 50, "iterations sent per pipeline (1: one round trip per script)")
	slow := flag.Bool("slowlog", true, "per-step means from SLOWLOG (threshold 0)")
	base := flag.String("base", "", "variant the deltas are taken against (default: the first)")
	flag.Parse()

	lines := []string(specs)
	if *vfile != "" {
		b, err := os.ReadFile(*vfile)
		check(err)
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
	}
	if len(lines) == 0 {
		fmt.Fprintln(os.Stderr, "luacost: no variants (-v or -f)")
		os.Exit(2)
	}
	rel := "." // file names are relative to the working directory
	var vs []variant
	for _, l := range lines {
		vs = append(vs, parseVariant(l, rel))
	}

	if *addr == "" {
		*addr = fmt.Sprintf("127.0.0.1:%d", *port)
	}
	if *start {
		stopServer = startServer(*port)
		defer stopServer()
	}
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: 2})
	defer c.Close()
	check(c.ConfigSet(ctx, "slowlog-max-len", fmt.Sprint(2*(*n)*maxSteps(vs)+100)).Err())
	thr := "-1"
	if *slow {
		thr = "0"
	}
	check(c.ConfigSet(ctx, "slowlog-log-slower-than", thr).Err())
	for i := range vs {
		for j := range vs[i].steps {
			st := &vs[i].steps[j]
			if isFunc(st.role) {
				// Each variant's library and functions get its own names.
				suf := fmt.Sprintf("_v%d", i)
				text := strings.Replace(readSteps(st.files, rel), "#!lua name=luacost", "#!lua name=luacost"+suf, 1)
				text = strings.ReplaceAll(text, "'luacost_acq'", "'luacost_acq"+suf+"'")
				text = strings.ReplaceAll(text, "'luacost_rel'", "'luacost_rel"+suf+"'")
				check(c.FunctionLoadReplace(ctx, text).Err())
				st.sha = funcName(st.role) + suf
				continue
			}
			sha, err := c.ScriptLoad(ctx, readSteps(st.files, rel)).Result()
			check(err)
			st.sha = sha
		}
	}
	nIter = *n
	res := make([][]sample, len(vs))
	for r := 0; r < *rounds; r++ {
		for k := range vs {
			i := (k + r) % len(vs)
			res[i] = append(res[i], measure(ctx, c, vs[i], i, *warm, *n, *pipe, *slow))
		}
		fmt.Fprintf(os.Stderr, "round %d/%d done\n", r+1, *rounds)
	}
	info, _ := c.Info(ctx, "server").Result()
	ver := ""
	for _, l := range strings.Split(info, "\n") {
		if strings.HasPrefix(l, "redis_version:") {
			ver = strings.TrimSpace(l)
		}
	}
	fmt.Printf("# luacost: %s, n=%d per round, %d rounds, pipe %d, %s\n", ver, *n, *rounds, *pipe, time.Now().UTC().Format(time.RFC3339))
	baseIdx := 0
	for i, v := range vs {
		if v.name == *base {
			baseIdx = i
		}
	}
	report(os.Stdout, vs, res, baseIdx)
}

func parseVariant(l, rel string) variant {
	name, rest, ok := strings.Cut(l, "=")
	if !ok {
		fail("variant %q: want name=role:file,...", l)
	}
	v := variant{name: strings.TrimSpace(name)}
	for _, s := range strings.Split(rest, ",") {
		role, files, ok := strings.Cut(strings.TrimSpace(s), ":")
		if !ok || argsFor(role, "x", 0) == nil {
			fail("variant %q: bad step %q (roles: acq hacq rel oacq ohacq nacq nhacq nrel facq frel sacq srel racq rrel none)", l, s)
		}
		v.steps = append(v.steps, step{role: role, files: files})
	}
	return v
}

func readSteps(files, rel string) string {
	var sb strings.Builder
	for _, f := range strings.Split(files, "+") {
		if !filepath.IsAbs(f) {
			f = filepath.Join(rel, f)
		}
		b, err := os.ReadFile(f)
		check(err)
		sb.Write(b)
	}
	return sb.String()
}

func maxSteps(vs []variant) int {
	m := 1
	for _, v := range vs {
		m = max(m, len(v.steps))
	}
	return m
}

// startServer runs redis-server without persistence on 127.0.0.1:port and
// returns what stops it (by its PID).
func startServer(port int) func() {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1}); c.Ping(context.Background()).Err() == nil {
		c.Close()
		fail("-start: a server already answers on %s", addr)
	}
	dir, err := os.MkdirTemp("", "luacost")
	check(err)
	cmd := exec.Command("redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	check(cmd.Start())
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for i := 0; c.Ping(context.Background()).Err() != nil; i++ {
		if i > 500 {
			_ = cmd.Process.Kill()
			fail("redis-server on port %d did not answer", port)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	}
}

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

// stopServer stops the server that -start started (fail calls it too:
// os.Exit skips deferred calls).
var stopServer = func() {}

func fail(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "luacost: "+f+"\n", a...)
	stopServer()
	os.Exit(1)
}
