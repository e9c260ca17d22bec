//go:build race

package core_test

// raceEnabled reports a -race build, whose escape analysis differs: tests
// that count allocations skip under it.
const raceEnabled = true
