package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// subscriptionBytes measures the server memory that one shard-channel
// subscription keeps: n channels named as distsem names a process's
// channel of a semaphore ("<prefix>notify:{name}:<process>"), each with
// one subscriber, on one connection. It returns used_memory's growth per
// channel once the server counts all n.
func subscriptionBytes(ctx context.Context, rdb *redis.Client, prefix string, n int) (float64, error) {
	before, err := infoInt(ctx, rdb, "memory", "used_memory")
	if err != nil {
		return 0, err
	}
	ps := rdb.SSubscribe(ctx)
	defer ps.Close()
	const batch = 1000
	for i := 0; i < n; i += batch {
		chans := make([]string, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			chans = append(chans, fmt.Sprintf("%snotify:{sem-%06d}:p%016x", prefix, j, j))
		}
		if err := ps.SSubscribe(ctx, chans...); err != nil {
			return 0, err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := infoInt(ctx, rdb, "stats", "pubsubshard_channels")
		if err != nil {
			return 0, err
		}
		if got >= int64(n) {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the server counts %d of %d shard channels", got, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	after, err := infoInt(ctx, rdb, "memory", "used_memory")
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), nil
}

// infoInt reads one integer field of an INFO section.
func infoInt(ctx context.Context, rdb *redis.Client, section, field string) (int64, error) {
	info, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO %s has no %s", section, field)
}
