package consul_test

import (
	"testing"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/consul"
)

func newSem(t *testing.T, limit int64, opts ...core.Option) *consul.Semaphore {
	t.Helper()
	c := newClient(t)
	opts = append([]core.Option{core.WithKeyPrefix(uniquePrefix())}, opts...)
	s := consul.New(c, "conf", limit, opts...)
	t.Cleanup(func() { _ = s.Close() })
	return s
}
