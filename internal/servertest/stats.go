package servertest

import (
	"context"
	"testing"

	"github.com/distsem/distsem/core"
)

// InUse returns the permits held on key's semaphore of k, failing the test
// if the backend cannot say. Tests use it to check that every permit came
// back.
func InUse(tb testing.TB, k *core.Keyed, key string) int64 {
	tb.Helper()
	st, err := k.Stats(context.Background(), key)
	if err != nil {
		tb.Fatal(err)
	}
	return st.InUse
}
