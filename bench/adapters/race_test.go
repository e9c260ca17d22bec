//go:build race

package adapters_test

const raceEnabled = true
