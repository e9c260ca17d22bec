package sqlmw

import "time"

// WithAfterFunc replaces time.AfterFunc, which starts the WithMaxHold
// timer, with a clock of the test's.
func WithAfterFunc(f func(d time.Duration, fire func()) (stop func() bool)) Option {
	return func(c *config) { c.afterFunc = f }
}
