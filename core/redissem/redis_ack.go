package redissem

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// WithReplicaAck's machinery (options_ack.go).
//
// WAIT cannot run inside a script, so an acknowledged script is sent in a
// pipeline [EVALSHA script, WAIT n timeout] on one connection to the master
// of the semaphore's slot: Redis runs a connection's commands in order and
// WAIT covers every write that connection made before it, the script's
// included. Scripts that would PUBLISH a grant note to another process
// hand it to the caller instead (the seventh key, keyAckSuffix, says so:
// PUBLISH_NOTES in lua/inline.lua), which publishes it once WAIT confirmed
// the write, in a second round trip that only a hand-off to another process
// needs. (A third command in the same pipeline would publish whatever WAIT
// answered: a hand-off would be announced before, or without, the replica
// having it.)

// keyAckSuffix names the seventh key of a semaphore with WithReplicaAck: its
// presence makes the scripts hand the notes of other processes to the
// caller. Only reack and lua/confirm.lua write it, a marker that expires,
// so that the WAIT after them covers every earlier write.
const keyAckSuffix = "a"

// ackedScripts are the scripts that WithReplicaAck follows by WAIT: those
// that grant, release or renew.
var ackedScripts = map[*redis.Script]bool{scriptAcquire: true, scriptRelease: true, scriptHeartbeat: true, scriptReassert: true, scriptConfirm: true}

// ackShortfall is the error of an acknowledged script that ran, but that
// fewer replicas than asked acknowledged in time; reply is the script's.
type ackShortfall struct {
	got, want int64
	reply     []any
}

func (e *ackShortfall) Error() string {
	return fmt.Sprintf("%d of %d replicas acknowledged", e.got, e.want)
}

// heldNote is a grant note that a script handed to the caller to publish
// (WithReplicaAck): the payload of one PUBLISH on ch.
type heldNote struct{ ch, payload string }

// parseHeld parses a held note of a script's reply: '>' channel '\n'
// payload.
func parseHeld(s string) (heldNote, bool) {
	ch, payload, ok := strings.Cut(s[1:], "\n")
	return heldNote{ch: ch, payload: payload}, ok
}

// eval runs cmd, the EVALSHA command of sc (evalSHA); with WithReplicaAck,
// a script that grants, releases or renews is followed by WAIT.
func (b *redisBackend) eval(ctx context.Context, sc *redis.Script, cmd []any) *redis.Cmd {
	if b.cfg.ack.n == 0 || !ackedScripts[sc] {
		return evalSHA(ctx, b.client, sc, cmd)
	}
	return b.evalAcked(ctx, sc, cmd)
}

// evalAcked runs [cmd, WAIT n timeout] in one pipeline on the master of the
// script's first key, and returns the script's command; its error is an
// *ackShortfall if fewer than n replicas acknowledged.
func (b *redisBackend) evalAcked(ctx context.Context, sc *redis.Script, cmd []any) *redis.Cmd {
	key, _ := cmd[3].(string)
	node, err := b.masterOf(ctx, key)
	for attempt := 0; ; attempt++ {
		c := redis.NewCmd(ctx, cmd...)
		if err != nil {
			c.SetErr(err)
			return c
		}
		w := redis.NewIntCmd(ctx, "wait", b.cfg.ack.n, b.cfg.ack.timeout.Milliseconds())
		p := node.Pipeline()
		_ = p.Process(ctx, c)
		_ = p.Process(ctx, w)
		_, _ = p.Exec(ctx)
		if cerr := c.Err(); cerr != nil {
			if attempt == 0 && noScript(cerr) {
				err = sc.Load(ctx, node).Err() // a failed load fails the next try
				continue
			}
			if k := clusterReplyOf(cerr); k == replyMoved || k == replyDown {
				b.reloadSlots()
			}
			return c
		}
		if err := w.Err(); err != nil {
			// The script ran, but whether the replicas have it is unknown:
			// the caller undoes it as after a lost reply.
			c.SetErr(err)
			return c
		}
		if got := w.Val(); got < int64(b.cfg.ack.n) {
			v, _ := c.Slice()
			c.SetErr(&ackShortfall{got: got, want: int64(b.cfg.ack.n), reply: v})
		}
		return c
	}
}

// masterOf returns the client that reaches the master of key: on Cluster
// the node that serves key's slot, as the slot map says; else the client.
func (b *redisBackend) masterOf(ctx context.Context, key string) (redis.Cmdable, error) {
	if cc, ok := b.client.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, key)
	}
	return b.client, nil
}

// publishHeld publishes the notes that a script handed to this process
// (WithReplicaAck), once the write was acknowledged, on the master of s's
// slot. If that fails, each waiter learns of its grant at its next
// heartbeat.
func (s *Semaphore) publishHeld(ctx context.Context, notes []heldNote) {
	ctx, cancel := bound(context.WithoutCancel(ctx), s.b.cfg.fault.opTimeout)
	defer cancel()
	node, err := s.b.masterOf(ctx, s.keys[0])
	if err == nil {
		p := node.Pipeline()
		for _, n := range notes {
			if strings.Contains(n.ch, "{") {
				p.SPublish(ctx, n.ch, n.payload)
			} else {
				p.Publish(ctx, n.ch, n.payload)
			}
		}
		_, err = p.Exec(ctx)
	}
	if err != nil {
		s.b.report(s.label, unavailable("publish grants", s.name, err))
	}
}

// unacked is the error of script sc on s whose write fewer replicas than
// asked acknowledged in time: nil for a release (reported, not returned:
// see WithReplicaAck), an error wrapping ErrReplicaAck otherwise.
func (s *Semaphore) unacked(sc *redis.Script, short *ackShortfall) error {
	err := fmt.Errorf("%w: %v within %v", ErrReplicaAck, short, s.b.cfg.ack.timeout)
	if sc == scriptRelease {
		s.b.report(s.label, fmt.Errorf("redissem: release %q: %w", s.name, err))
		return nil
	}
	return err
}

// reack confirms that n replicas have what an acknowledged script found
// done already (a re-run, whose first run's reply was lost, or a heartbeat
// that reports a grant made by another process's release): WAIT after a
// script that wrote nothing covers only the earlier writes of its own
// connection, not those others. So it makes a write of its own, to s's
// seventh key (expiring), and WAITs for it; every earlier write of the
// master is in the replication stream before it. It returns nil once
// acknowledged. (Should the primary change between the script and reack,
// reack vouches for the new one: the holder's re-assertion after the
// switch covers that window of a round trip.)
func (s *Semaphore) reack(ctx context.Context) *ackShortfall {
	n := int64(s.b.cfg.ack.n)
	node, err := s.b.masterOf(ctx, s.keys[0])
	if err != nil {
		return &ackShortfall{want: n}
	}
	key := s.keys[0][:len(s.keys[0])-1] + keyAckSuffix // prefix{name}:a
	p := node.Pipeline()
	p.Set(ctx, key, 1, time.Second)
	w := p.Do(ctx, "wait", n, s.b.cfg.ack.timeout.Milliseconds())
	_, _ = p.Exec(ctx)
	if got, err := w.Int64(); err != nil || got < n {
		return &ackShortfall{got: got, want: n}
	}
	return nil
}

// Bounds of announceLater's tries: from laterFirst, doubling up to
// laterMax, for at most a third of the default lease TTL (by then the
// waiters' heartbeats have run).
const (
	laterFirst = 20 * time.Millisecond
	laterMax   = 500 * time.Millisecond
)

// announceLater announces, in the background, the grants that a script
// made but that too few replicas acknowledged (mine for this process's
// waiters, held for other processes'), once a later WAIT confirms them: a
// hand-off made while a replica lagged, or before a promoted replica had
// one of its own, then starts as soon as the replicas catch up, rather
// than at the waiter's next heartbeat (which still heals it if these tries
// give up). Each try checks first, where it runs, that every grant is
// still there with its token (lua/confirm.lua): a try may reach a new
// primary that never had it, which must not be vouched for.
func (s *Semaphore) announceLater(mine []grantNote, held []heldNote) {
	var args []any
	for _, n := range mine {
		if n.token > 0 {
			args = append(args, n.id, n.token)
		}
	}
	for _, h := range held {
		ns, _ := parseNotes(h.payload)
		for _, n := range ns {
			if n.token > 0 {
				args = append(args, n.id, n.token)
			}
		}
	}
	if len(args) == 0 {
		return
	}
	b := s.b
	b.goBackground(func() {
		end := time.Now().Add(b.cfg.leaseTTL / 3)
		for wait := laterFirst; ; wait = min(2*wait, laterMax) {
			t := time.NewTimer(wait)
			select {
			case <-b.stop:
				t.Stop()
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), b.cfg.fault.opTimeout)
			v, err := b.callRetry(ctx, scriptConfirm, scriptCmd(scriptConfirm, s.argsAck(), append([]any{s.limit, s.notify}, args...)...))
			if err == nil {
				s.announceConfirmed(ctx, v, mine, held)
			}
			cancel()
			if err == nil || time.Now().Add(wait).After(end) {
				return
			}
		}
	})
}

// argsAck is s's keys with WithReplicaAck's, the seventh.
func (s *Semaphore) argsAck() []string {
	return append(s.keys[:len(s.keys):len(s.keys)], s.keys[0][:len(s.keys[0])-1]+keyAckSuffix)
}

// announceConfirmed delivers and publishes the grants among mine and held
// whose ids confirm.lua returned (v).
func (s *Semaphore) announceConfirmed(ctx context.Context, v []any, mine []grantNote, held []heldNote) {
	ok := make(map[string]bool, len(v))
	for _, x := range v {
		if id, _ := x.(string); id != "" {
			ok[id] = true
		}
	}
	var deliver []grantNote
	for _, n := range mine {
		if ok[n.id] {
			deliver = append(deliver, n)
		}
	}
	s.b.deliver(deliver)
	var pub []heldNote
	for _, h := range held {
		var keep []string
		for _, part := range strings.Split(h.payload, ",") {
			if id, _, _ := strings.Cut(part, ":"); ok[id] {
				keep = append(keep, part)
			}
		}
		if len(keep) > 0 {
			pub = append(pub, heldNote{ch: h.ch, payload: strings.Join(keep, ",")})
		}
	}
	if len(pub) > 0 {
		s.publishHeld(ctx, pub)
	}
}
