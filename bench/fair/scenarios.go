package main

import (
	"time"

	"github.com/distsem/distsem/core"
)

// group is a set of workers of one process, all of one flow and level.
type group struct {
	Flow  string
	Level int
	Gors  int           // goroutines looping acquire → hold → release
	Every time.Duration // if set: instead, one request every Every (open loop)
	Stop  float64       // if set: the group starts no acquire after this fraction of the run
	// Unique makes each acquire of the group a flow of its own (Flow plus
	// a counter): the distinct-flows memory run.
	Unique bool
}

// scenario is one workload of BENCHMARKS.md's fair-queuing section.
type scenario struct {
	Limit    int64
	Hold     time.Duration
	Fairness core.Fairness
	Procs    [][]group // per process
}

func loop(flow string, level, gors int) group { return group{Flow: flow, Level: level, Gors: gors} }

var scenarios = map[string]scenario{
	// A noisy flow keeps 500 waiters queued from 3 processes; a quiet one
	// asks once every 100 ms from a 4th.
	"noisy": {Limit: 4, Hold: 10 * time.Millisecond, Procs: [][]group{
		{loop("A", 0, 167)}, {loop("A", 0, 167)}, {loop("A", 0, 166)},
		{{Flow: "B", Every: 100 * time.Millisecond}},
	}},
	// Three flows weighted 1 : 2 : 4, all backlogged, each in every process.
	"weights": {Limit: 4, Hold: 2 * time.Millisecond,
		Fairness: core.Fairness{Weights: map[string]int64{"w1": 1, "w2": 2, "w4": 4}},
		Procs:    repeat(4, []group{loop("w1", 0, 8), loop("w2", 0, 8), loop("w4", 0, 8)})},
	// 50 equally weighted flows over 4 processes.
	"fifty": {Limit: 4, Hold: 2 * time.Millisecond, Procs: fifty()},
	// Level 0 backlogged from 3 processes and then idle (at half time);
	// level 1 loops from a 4th, with a reserve of 1 of the limit 4.
	"reserve": {Limit: 4, Hold: 10 * time.Millisecond, Fairness: core.Fairness{Reserves: []int64{0, 1}}, Procs: reserveProcs()},
	// The same with no reserve: level 1 gets nothing until level 0 is idle.
	"noreserve": {Limit: 4, Hold: 10 * time.Millisecond, Fairness: core.Fairness{Reserves: []int64{0, 0}}, Procs: reserveProcs()},
	// Every acquire a flow of its own, from 4 processes: memory stays
	// bounded whatever the number of flow ids.
	"distinct": {Limit: 8, Procs: repeat(4, []group{{Flow: "f", Gors: 64, Unique: true}})},
}

func repeat(n int, gs []group) [][]group {
	procs := make([][]group, n)
	for i := range procs {
		procs[i] = gs
	}
	return procs
}

func fifty() [][]group {
	procs := make([][]group, 4)
	for f := range 50 {
		procs[f%4] = append(procs[f%4], loop(flowName(f), 0, 4))
	}
	return procs
}

func reserveProcs() [][]group {
	high := group{Flow: "high", Gors: 32, Stop: 0.5}
	return [][]group{{high}, {high}, {high}, {{Flow: "low", Level: 1, Gors: 4}}}
}

func flowName(i int) string { return "flow-" + string(rune('a'+i/26)) + string(rune('a'+i%26)) }
