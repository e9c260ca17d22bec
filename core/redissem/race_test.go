//go:build race

package redissem_test

// raceEnabled reports a -race build, whose escape analysis differs: tests
// that count allocations skip under it.
const raceEnabled = true
