package core

import (
	"context"
	"sync"
	"time"

	"github.com/distsem/distsem/core/internal/names"
)

// Inspector is a semaphore that lists its holders and waiters, for
// operators. Every semaphore of distsem implements it: Local, the Redis
// semaphores of core/redissem (and their keyed forms, through
// Keyed.Inspect) and core/consul's.
type Inspector interface {
	// Inspect returns a snapshot of the semaphore: at most limit holders
	// and at most limit waiters, and how many of each it left out. It
	// changes nothing. A limit outside [1, MaxInspectLimit] is an
	// ErrInvalidArgument error; a backend failure an ErrUnavailable one.
	Inspect(ctx context.Context, limit int) (Snapshot, error)
}

// MaxInspectLimit is the largest limit Inspect takes.
const MaxInspectLimit = 10000

// Snapshot is what Inspect returns. Each backend documents how consistent
// it is and what it lists: the Redis semaphore's is read by one script, at
// one instant; Local's under its lock, and it lists only the holders
// granted since its first Inspect (see Local.Inspect).
type Snapshot struct {
	Limit   int64 // the limit in force
	InUse   int64 // the sum of the weights of all holders, listed or not
	Waiting int64 // the number of waiters, listed or not
	// Holders are the holders listed, in the backend's order (Local and
	// Consul: oldest grant first; Redis: earliest lease end first).
	Holders []Holder
	// Waiters are the waiters listed, head of the queue first.
	Waiters []Waiter
	// OmittedHolders and OmittedWaiters count the holders and waiters
	// left out by the limit.
	OmittedHolders int64
	OmittedWaiters int64
	// At is the backend's time of the snapshot (Redis TIME on Redis).
	At time.Time
}

// Holder is a holder of permits in a Snapshot.
type Holder struct {
	ID        string    // the permit's Permit.ID; empty for Local
	Weight    int64     // the permits held
	Token     int64     // the fencing token (Permit.Token)
	GrantedAt time.Time // the backend's time of the grant; zero if unknown (Local)
	LeaseEnd  time.Time // when the lease ends unless renewed; zero: no lease (Local)
	Owner     string    // the holder's process, as WithOwner set it; empty if none
	Note      string    // the note given with WithNote; empty if none
}

// Waiter is a queued Acquire in a Snapshot.
type Waiter struct {
	Position int64     // the place in the queue: 0 is the head
	ID       string    // the waiter's handle in the backend; empty for Local
	Weight   int64     // the permits asked for
	Since    time.Time // when it queued; zero if the backend does not know
	Owner    string    // the waiter's process, as WithOwner set it; empty if none
	Note     string    // the note given with WithNote; empty if none
	// Flow and Level are the waiter's flow (WithFlow; empty for the
	// default flow) and priority level (WithLevel; 0 is the highest).
	Flow  string
	Level int
}

// MaxNoteLen is the longest note, in bytes, that WithNote takes.
const MaxNoteLen = 64

// MaxOwnerLen is the longest owner, in bytes, that WithOwner takes.
const MaxOwnerLen = 128

// WithNote attaches a short note to the permit (for example "backup of
// db-3"), which Inspect lists with its holder and, while it waits, its
// waiter. The default is none. A note is untrusted input: one longer than
// MaxNoteLen bytes, not valid UTF-8, or with a control character fails the
// call with an ErrInvalidArgument error (it is refused, never truncated).
// It is stored as given and never changes what the backend stores beside
// it. Reentrant's nested Acquire checks it, then ignores it: the held
// permit keeps its own.
func WithNote(note string) AcquireOption {
	return func(a *acquireConfig) { a.note, a.noteSet = note, true }
}

// WithOwner names the process that holds or waits for permits in what
// Inspect lists, for example a pod's name. The default is DefaultOwner():
// the host name and the process id. "" stores no owner. An owner longer
// than MaxOwnerLen bytes, not valid UTF-8, or with a control character
// makes the constructor panic. Local, its keyed form and the network
// backends take it.
func WithOwner(owner string) Option {
	return func(c *config) { c.owner = owner; c.given |= optOwner }
}

var defaultOwner = sync.OnceValue(DefaultOwner)

// DefaultOwner returns "<host>:<pid>": the host name (os.Hostname, or
// "unknown") and the process id, cut to MaxOwnerLen bytes.
func DefaultOwner() string { return names.Owner(MaxOwnerLen) }

// Inspect lists the holders and waiters of key's semaphore; see
// Inspector. Its semaphore is made if the key has none in this process, as
// Stats does. A key's semaphore that is no Inspector (of a backend outside
// distsem) makes it return an ErrInvalidArgument error.
func (k *Keyed) Inspect(ctx context.Context, key string, limit int) (Snapshot, error) {
	e, err := k.ref(key)
	if err != nil {
		return Snapshot{}, err
	}
	defer k.unref(e)
	in, ok := e.sem.(Inspector)
	if !ok {
		return Snapshot{}, invalid("the semaphore of key %q (%T) cannot be inspected", key, e.sem)
	}
	return in.Inspect(ctx, limit)
}
