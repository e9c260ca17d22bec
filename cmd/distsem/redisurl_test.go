package main

import (
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Each scheme of the usage text gives go-redis's options of its kind.
func TestRedisURLSchemes(t *testing.T) {
	t.Parallel()
	o, err := redisOptions("rediss://u:p@h:6380/2?dial_timeout=2s")
	if s, ok := o.(*redis.Options); err != nil || !ok || s.Addr != "h:6380" || s.DB != 2 || s.Password != "p" || s.TLSConfig == nil {
		t.Errorf("rediss: %+v, %v", o, err)
	}
	o, err = redisOptions("redis-sentinel://u:p@s1:26379,s2:26380/mymaster/1?sentinel_password=sp")
	f, ok := o.(*redis.FailoverOptions)
	if err != nil || !ok || f.MasterName != "mymaster" || f.DB != 1 ||
		!reflect.DeepEqual(f.SentinelAddrs, []string{"s1:26379", "s2:26380"}) ||
		f.Username != "u" || f.Password != "p" || f.SentinelPassword != "sp" || f.TLSConfig != nil {
		t.Errorf("redis-sentinel: %+v, %v", o, err)
	}
	o, err = redisOptions("rediss-cluster://:p@c1:7000,c2:7001,c3:7002?max_redirects=5")
	c, ok := o.(*redis.ClusterOptions)
	if err != nil || !ok || !reflect.DeepEqual(c.Addrs, []string{"c1:7000", "c2:7001", "c3:7002"}) ||
		c.Password != "p" || c.MaxRedirects != 5 || c.TLSConfig == nil {
		t.Errorf("rediss-cluster: %+v, %v", o, err)
	}
	for _, bad := range []string{
		"", "h:6379", "http://h", "redis-ring://h", "redis-sentinel://h:1",
		"redis-cluster://h:1/3", "redis-cluster://h:1,,h:2", "redis://h?no_such_option=1",
	} {
		if o, err := redisOptions(bad); err == nil {
			t.Errorf("%q: %+v, want an error", bad, o)
		}
	}
}
