// Command hopfloor measures the floor of a hand-off's two legs on this
// machine, with no semaphore at all: a process wakes from a timer and runs a
// script that reads TIME and PUBLISHes it (the release → script leg), and
// another process, subscribed, receives it (the script → waiter leg). The
// publisher also reads its own reply (the in-process hand-off's leg).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var script = redis.NewScript(`local t = redis.call('TIME')
local x = 0
for i = 1, tonumber(ARGV[1]) do x = x + i end
local us = t[1] .. string.format('%06d', tonumber(t[2]))
redis.call('PUBLISH', KEYS[1], us)
return us`)

func main() {
	addr := flag.String("addr", "127.0.0.1:7460", "redis address")
	n := flag.Int("n", 3000, "hand-offs")
	gap := flag.Duration("gap", 2*time.Millisecond, "sleep before each publish")
	role := flag.String("role", "pub", "pub or sub")
	work := flag.Int("work", 0, "Lua loop iterations in the script (its own cost)")
	flag.Parse()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: *addr})
	if *role == "sub" {
		ps := c.Subscribe(ctx, "hopfloor")
		if _, err := ps.Receive(ctx); err != nil {
			panic(err)
		}
		fmt.Println("ready")
		var d []float64
		for {
			m, err := ps.ReceiveMessage(ctx)
			if err != nil {
				panic(err)
			}
			now := time.Now().UnixMicro()
			if m.Payload == "end" {
				break
			}
			us, _ := strconv.ParseInt(m.Payload, 10, 64)
			d = append(d, float64(now-us)/1000)
		}
		report("script → subscriber (other process)", d)
		return
	}
	cmd := exec.Command(os.Args[0], "-role", "sub", "-addr", *addr)
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil {
		panic(err)
	}
	if err := script.Load(ctx, c).Err(); err != nil {
		panic(err)
	}
	var a, b []float64
	for range *n {
		time.Sleep(*gap)
		t0 := time.Now().UnixMicro()
		s, err := script.Run(ctx, c, []string{"hopfloor"}, *work).Text()
		t1 := time.Now().UnixMicro()
		if err != nil {
			panic(err)
		}
		us, _ := strconv.ParseInt(s, 10, 64)
		a = append(a, float64(us-t0)/1000)
		b = append(b, float64(t1-us)/1000)
	}
	c.Publish(ctx, "hopfloor", "end")
	report("call → script (timer-woken caller)", a)
	report("script → reply (same caller)", b)
	rest := new(strings.Builder)
	buf = make([]byte, 4096)
	for {
		k, err := out.Read(buf)
		rest.Write(buf[:k])
		if err != nil {
			break
		}
	}
	fmt.Print(rest.String())
	_ = cmd.Wait()
}

func report(name string, d []float64) {
	slices.Sort(d)
	q := func(p float64) float64 { return d[int(p*float64(len(d)-1))] }
	fmt.Printf("%-40s n=%d p50 %.3f ms  p90 %.3f  p99 %.3f\n", name, len(d), q(0.5), q(0.9), q(0.99))
}
