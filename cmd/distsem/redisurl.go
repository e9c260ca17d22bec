package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// newRedisClient returns a client of the Redis that rawURL names, in one
// of the schemes of the usage text: redis:// and rediss:// for one server
// (go-redis's ParseURL), redis-sentinel:// and redis-cluster:// (and their
// rediss- forms) for a list of Sentinels or Cluster nodes. The last two
// are rewritten into go-redis's own URLs for ParseFailoverURL and
// ParseClusterURL: the first host stays the host, the others become addr
// options, and the Sentinel URL's master moves to master_name. The client
// is not connected yet.
func newRedisClient(rawURL string) (redis.UniversalClient, error) {
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
		o, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, err
		}
		return redis.NewClient(o), nil
	case "sentinel":
		return newSentinelClient(u, base)
	case "cluster":
		if strings.Trim(u.Path, "/") != "" {
			return nil, errors.New("a Cluster URL has no path: Redis Cluster has one database")
		}
		gu, err := rewriteHosts(u, base)
		if err != nil {
			return nil, err
		}
		o, err := redis.ParseClusterURL(gu.String())
		if err != nil {
			return nil, err
		}
		return redis.NewClusterClient(o), nil
	}
	return nil, fmt.Errorf("unknown scheme %q ('distsem -h' lists the schemes)", u.Scheme)
}

// newSentinelClient returns the failover client of a redis-sentinel URL u:
// host:port[,host:port...]/master[/db].
func newSentinelClient(u *url.URL, base string) (redis.UniversalClient, error) {
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
	return redis.NewFailoverClient(o), nil
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
