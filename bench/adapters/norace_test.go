//go:build !race

package adapters_test

const raceEnabled = false
