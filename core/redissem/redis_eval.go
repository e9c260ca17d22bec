package redissem

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// evalSHA is the one way this package runs a script: it sends cmd, the
// EVALSHA command of sc ("evalsha", sha, numkeys, keys..., args...; see
// scriptCmd), as Script.Run would (cmdable.eval's command, with the key
// position set for Cluster), and falls back to EVAL on NOSCRIPT. It is
// Script.Run by hand so that a semaphore's script calls box their constant
// part once (evalArgs) rather than per call: measured on the uncontended
// acquire/release pair and the zero-hold burst, Script.Run cost 5 to 7%
// of their rate.
func evalSHA(ctx context.Context, client redis.UniversalClient, sc *redis.Script, cmd []any) *redis.Cmd {
	c := redis.NewCmd(ctx, cmd...)
	n, _ := cmd[2].(int)
	if n > 0 {
		c.SetFirstKeyPos(3)
	}
	_ = client.Process(ctx, c)
	if !noScript(c.Err()) {
		return c
	}
	return evalLoading(ctx, client, sc, cmd)
}

// noScript reports whether err says that Redis does not have the script
// (NOSCRIPT): after a SCRIPT FLUSH, a restart or a failover.
func noScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// evalLoading runs cmd (evalSHA's form) by EVAL, which loads sc: for a
// command that got NOSCRIPT.
func evalLoading(ctx context.Context, client redis.UniversalClient, sc *redis.Script, cmd []any) *redis.Cmd {
	n, _ := cmd[2].(int)
	keys := make([]string, n)
	for i := range keys {
		keys[i], _ = cmd[3+i].(string)
	}
	return sc.Eval(ctx, client, keys, cmd[3+n:]...)
}

// scriptCmd is the EVALSHA command of sc with keys and argv, for evalSHA.
func scriptCmd(sc *redis.Script, keys []string, argv ...any) []any {
	cmd := make([]any, 0, 3+len(keys)+len(argv))
	cmd = append(cmd, "evalsha", boxedSHA(sc), len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	return append(cmd, argv...)
}

// scriptPing declares a key and does nothing: a node that is not the master
// of the key's slot refuses it (MOVED), see isMaster.
var scriptPing = newScript("return 1")

// shas holds each script's SHA-1 as an interface value, boxed once; every
// script is made by newScript, which records it.
var shas = make(map[*redis.Script]any)

// newScript returns the script of src, its SHA-1 boxed once in shas. It
// runs only while the package's variables are initialised.
func newScript(src string) *redis.Script {
	sc := redis.NewScript(src)
	shas[sc] = sc.Hash()
	return sc
}

func boxedSHA(sc *redis.Script) any {
	if h, ok := shas[sc]; ok {
		return h
	}
	return sc.Hash()
}

// evalArgs is the constant part of a semaphore's script calls, boxed once:
// numkeys and the keys, and the channel of this process's grants.
type evalArgs struct {
	keys   []any // numkeys, keys...
	notify any
}

func newEvalArgs(keys []string, notify string) evalArgs {
	a := evalArgs{keys: make([]any, 0, 1+len(keys)), notify: notify}
	a.keys = append(a.keys, len(keys))
	for _, k := range keys {
		a.keys = append(a.keys, k)
	}
	return a
}
