package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// newRedisClient returns a client of the Redis that rawURL names (see
// redisOptions). The client is not connected yet.
func newRedisClient(rawURL string) (redis.UniversalClient, error) {
	o, err := redisOptions(rawURL)
	if err != nil {
		return nil, err
	}
	switch o := o.(type) {
	case *redis.Options:
		return redis.NewClient(o), nil
	case *redis.FailoverOptions:
		return redis.NewFailoverClient(o), nil
	case *redis.ClusterOptions:
		return redis.NewClusterClient(o), nil
	}
	return nil, fmt.Errorf("options of type %T", o)
}

// redisOptions returns the options of the Redis that rawURL names, in one
// of the schemes of the usage text: redis:// and rediss:// for one server
// (go-redis's ParseURL), redis-sentinel:// and redis-cluster:// (and their
// rediss- forms) for a list of Sentinels or Cluster nodes. The last two
// are rewritten into go-redis's own URLs for ParseFailoverURL and
// ParseClusterURL: the first host stays the host, the others become addr
// options, and the Sentinel URL's master moves to master_name. The options
// are a *redis.Options, *redis.FailoverOptions or *redis.ClusterOptions.
func redisOptions(rawURL string) (any, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	base, kind, _ := strings.Cut(u.Scheme, "-")
	if base != "redis" && base != "rediss" {
		if u.Scheme == "" {
			return nil, errors.New("no scheme: give redis://host:port or another scheme of 'distsem -h'")
		}
		return nil, fmt.Errorf("unknown scheme %q ('distsem -h' lists the schemes)", u.Scheme)
	}
	switch kind {
	case "":
		return redis.ParseURL(rawURL)
	case "sentinel":
		return sentinelOptions(u, base)
	case "cluster":
		if strings.Trim(u.Path, "/") != "" {
			return nil, errors.New("a Cluster URL has no path: Redis Cluster has one database")
		}
		gu, err := rewriteHosts(u, base)
		if err != nil {
			return nil, err
		}
		return redis.ParseClusterURL(gu.String())
	}
	return nil, fmt.Errorf("unknown scheme %q ('distsem -h' lists the schemes)", u.Scheme)
}

// sentinelOptions returns the options of a redis-sentinel URL u:
// host:port[,host:port...]/master[/db].
func sentinelOptions(u *url.URL, base string) (*redis.FailoverOptions, error) {
	master, db, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if master == "" {
		return nil, errors.New("a Sentinel URL names the master after the hosts: redis-sentinel://host:port,.../master")
	}
	gu, err := rewriteHosts(u, base)
	if err != nil {
		return nil, err
	}
	q := gu.Query()
	q.Set("master_name", master)
	// go-redis takes the URL's user for the Sentinels' and the options for
	// Redis's; here the URL's user is Redis's, as in the other schemes.
	sentinelUser, sentinelPassword := q.Get("sentinel_username"), q.Get("sentinel_password")
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	if gu.User != nil {
		q.Set("username", gu.User.Username())
		if p, ok := gu.User.Password(); ok {
			q.Set("password", p)
		}
		gu.User = nil
	}
	gu.Path, gu.RawPath = "/"+db, ""
	gu.RawQuery = q.Encode()
	o, err := redis.ParseFailoverURL(gu.String())
	if err != nil {
		return nil, err
	}
	o.SentinelUsername, o.SentinelPassword = sentinelUser, sentinelPassword
	return o, nil
}

// rewriteHosts returns u with the scheme base, the first of u's
// comma-separated hosts as its host and the others as addr options.
func rewriteHosts(u *url.URL, base string) (*url.URL, error) {
	hosts := strings.Split(u.Host, ",")
	for _, h := range hosts {
		if h == "" {
			return nil, fmt.Errorf("an empty host in %q", u.Host)
		}
	}
	gu := *u
	gu.Scheme, gu.Host = base, hosts[0]
	q := gu.Query()
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	gu.RawQuery = q.Encode()
	return &gu, nil
}
