package main

import (
	"strings"
	"testing"

	"github.com/distsem/distsem/internal/servertest"
)

// distsem runs a command under a permit through a Sentinel URL and a
// Cluster URL.
func TestRunThroughSentinelAndCluster(t *testing.T) {
	t.Parallel()
	sentinels, master := servertest.RedisSentinel(t)
	for scheme, url := range map[string]string{
		"sentinel": "redis-sentinel://" + strings.Join(sentinels, ",") + "/" + master,
		"cluster":  "redis-cluster://" + strings.Join(servertest.RedisClusterAddrs(t), ","),
	} {
		name, prefix := uniqueName()
		cmd, stdout, stderr := distsem(t, "run", "-redis", url, "-prefix", prefix, "-n", "1", "-name", name, "--", "sh", "-c", `echo "$DISTSEM_TOKEN"`)
		if code := exitCode(t, cmd); code != 0 || strings.TrimSpace(stdout.String()) == "" {
			t.Errorf("%s: exit status %d, token %q; stderr: %s", scheme, code, stdout, stderr)
		}
	}
}
