package main

import (
	"context"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"
)

// gate is the limit of the ceiling modes, -mode pipe and -mode list: a
// query takes a token before it runs and puts it back after.
type gate interface {
	take(ctx context.Context) error
	put() error
}

// tokens is -mode pipe's limit: K bytes in an OS pipe that every worker
// inherits. A worker reads one before a query and writes it back after:
// the kernel hands a token from one process to another with no network
// and no server, which no limit across processes can beat.
type tokens struct{ r, w *os.File }

// maxPipeTokens is the most tokens -mode pipe holds: a pipe's buffer is
// at least 4096 bytes (PIPE_BUF), so the parent's write of the tokens
// does not block.
const maxPipeTokens = 4096

// newTokenPipe returns a pipe holding limit tokens, whose two ends go to
// each worker as its ExtraFiles (fds 3 and 4).
func newTokenPipe(limit int64) (*tokens, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(make([]byte, limit)); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("token pipe: %w", err)
	}
	return &tokens{r, w}, nil
}

// inheritedTokens returns the pipe that the parent passed to this worker.
func inheritedTokens() *tokens {
	return &tokens{os.NewFile(3, "tokens-read"), os.NewFile(4, "tokens-write")}
}

func (t *tokens) files() []*os.File { return []*os.File{t.r, t.w} }

// take blocks until a token is free, and takes it.
func (t *tokens) take(context.Context) error {
	var b [1]byte
	_, err := t.r.Read(b[:])
	return err
}

// put gives a token back.
func (t *tokens) put() error {
	_, err := t.w.Write([]byte{0})
	return err
}

func (t *tokens) Close() error {
	t.r.Close()
	return t.w.Close()
}

// listTokens is -mode list's limit: K tokens in a Redis list. A worker pops
// one (BLPOP, which serves blocked clients in arrival order) before a
// query and pushes it back after: the hand-off through Redis at its
// cheapest, one command on each side and no script, with none of the
// semaphore's guarantees (a worker that dies loses its tokens).
type listTokens struct {
	c   *redis.Client
	key string
}

// newListTokens fills key with limit tokens, dropping what it held.
func newListTokens(ctx context.Context, url, key string, limit int64) error {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	c := redis.NewClient(opt)
	defer c.Close()
	p := c.TxPipeline()
	p.Del(ctx, key)
	p.RPush(ctx, key, make([]any, limit)...)
	_, err = p.Exec(ctx)
	return err
}

// tokensKey is the Redis list of -mode list's tokens.
func (cfg workerConfig) tokensKey() string { return cfg.Name + ":tokens" }

// dialListTokens connects a worker to the list of its tokens.
func dialListTokens(cfg workerConfig) (listTokens, error) {
	opt, err := redis.ParseURL(cfg.Redis)
	if err != nil {
		return listTokens{}, err
	}
	opt.ReadTimeout = -1 // BLPOP waits as long as it must
	return listTokens{redis.NewClient(opt), cfg.tokensKey()}, nil
}

func (t listTokens) Close() error { return t.c.Close() }

func (t listTokens) take(ctx context.Context) error {
	return t.c.BLPop(ctx, 0, t.key).Err()
}

func (t listTokens) put() error {
	return t.c.RPush(context.Background(), t.key, 0).Err()
}
