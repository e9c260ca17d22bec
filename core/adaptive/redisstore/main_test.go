package redisstore_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/distsem/distsem/internal/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(servertest.Exit)) }
