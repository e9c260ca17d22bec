//go:build !race

package sqlmw_test

// raceEnabled reports a -race build, whose allocations differ.
const raceEnabled = false
