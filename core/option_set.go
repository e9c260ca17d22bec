package core

import (
	"fmt"
	"math/bits"
)

// optSet records which options a constructor was given, so that it can
// refuse, by name, an option it cannot honour instead of ignoring it.
type optSet uint32

const (
	optKeyPrefix optSet = 1 << iota
	optLeaseTTL
	optObserver
	optPolicy
	optOnError
	optLimits
	optMaxIdle
	optName
	optOwner
	optFairness
)

var optNames = [...]string{
	"WithKeyPrefix", "WithDefaultLeaseTTL", "WithObserver", "WithFailurePolicy", "WithOnError",
	"WithLimits", "WithMaxIdleKeys", "WithName", "WithOwner", "WithFairness",
}

// What each kind of constructor honours.
const (
	optsLocal  = optObserver | optName | optOwner | optFairness
	optsKeyed  = optLimits | optMaxIdle
	optsRemote = optKeyPrefix | optLeaseTTL | optObserver | optPolicy | optOnError | optOwner // ResolveOptions
)

// refuse panics, naming ctor and the option, if c holds an option outside
// allowed.
func (c *config) refuse(ctor string, allowed optSet) {
	if extra := c.given &^ allowed; extra != 0 {
		panic(fmt.Sprintf("core: %s does not take %s", ctor, optNames[bits.TrailingZeros32(uint32(extra))]))
	}
}
