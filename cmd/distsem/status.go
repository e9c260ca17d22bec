package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

const statusHead = `Usage: distsem status [flags] NAME...

Prints each semaphore's limit, the permits in use (the sum of the holders'
weights) and the number of queued waiters, then its holders (id, weight,
fencing token, grant time, lease end, owner, note) and waiters (position,
weight, queued since, owner, note), at most 100 of each; the rest are
counted. A semaphore the backend holds nothing of
(never used, or idle until its keys expired) shows "-" counts and "no
state" (in JSON, "stored": false and counts of 0).
status changes nothing in the backend.

With -json it prints one JSON array, an object per NAME:
  [{"name": "jobs", "stored": true, "limit": 4, "in_use": 2, "waiting": 0}]
`

// opTimeout bounds status and set-limit, and each refresh of watch.
const opTimeout = 10 * time.Second

func (a *app) statusCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("status")
	var bf backendFlags
	asJSON := fs.Bool("json", false, "print JSON")
	bf.register(fs)
	if err := a.parseFlags(fs, statusHead, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageErrorf("status: no NAME (distsem status [flags] NAME...)")
	}
	b, err := newBackend(&bf)
	if err != nil {
		return err
	}
	defer b.close()
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	in := newInspector(b)
	var states []state
	for _, name := range fs.Args() {
		st, err := in.inspect(ctx, name)
		if err != nil {
			return backendError(err)
		}
		states = append(states, st)
	}
	if *asJSON {
		return writeJSON(a.stdout, states)
	}
	writeTable(a.stdout, states)
	return nil
}

// jsonState is the JSON form of a state. Holders and waiters are left
// out, rather than empty, while the backend cannot list them.
type jsonState struct {
	Name           string        `json:"name"`
	Stored         bool          `json:"stored"`
	Limit          int64         `json:"limit"`
	InUse          int64         `json:"in_use"`
	Waiting        int64         `json:"waiting"`
	Holders        *[]jsonHolder `json:"holders,omitempty"`
	Waiters        *[]jsonWaiter `json:"waiters,omitempty"`
	OmittedHolders int64         `json:"omitted_holders,omitempty"`
	OmittedWaiters int64         `json:"omitted_waiters,omitempty"`
}

type jsonHolder struct {
	ID        string     `json:"id,omitempty"`
	Weight    int64      `json:"weight"`
	Token     int64      `json:"token"`
	GrantedAt *time.Time `json:"granted_at,omitempty"`
	LeaseEnd  *time.Time `json:"lease_end,omitempty"`
	Owner     string     `json:"owner,omitempty"`
	Note      string     `json:"note,omitempty"`
}

type jsonWaiter struct {
	Position int64      `json:"position"`
	Weight   int64      `json:"weight"`
	Since    *time.Time `json:"since,omitempty"`
	Owner    string     `json:"owner,omitempty"`
	Note     string     `json:"note,omitempty"`
}

func writeJSON(w io.Writer, states []state) error {
	out := make([]jsonState, 0, len(states))
	for _, s := range states {
		j := jsonState{Name: s.Name, Stored: s.Stored, Limit: s.Limit, InUse: s.InUse, Waiting: s.Waiting,
			OmittedHolders: s.OmittedHolders, OmittedWaiters: s.OmittedWaiters}
		if s.Listed {
			hs, ws := make([]jsonHolder, 0, len(s.Holders)), make([]jsonWaiter, 0, len(s.Waiters))
			for _, h := range s.Holders {
				hs = append(hs, jsonHolder{h.ID, h.Weight, h.Token, timeOrNil(h.GrantedAt), timeOrNil(h.LeaseEnd), h.Owner, h.Note})
			}
			for _, x := range s.Waiters {
				ws = append(ws, jsonWaiter{x.Position, x.Weight, timeOrNil(x.Since), x.Owner, x.Note})
			}
			j.Holders, j.Waiters = &hs, &ws
		}
		out = append(out, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// writeTable prints the counts of every state in one table, then the
// holders and waiters of each.
func writeTable(w io.Writer, states []state) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tLIMIT\tIN USE\tWAITING")
	listed := false
	var unknown []string
	for _, s := range states {
		if !s.Stored {
			fmt.Fprintf(tw, "%s\t-\t-\t-\n", s.Name)
			unknown = append(unknown, s.Name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", s.Name, s.Limit, s.InUse, s.Waiting)
		listed = listed || s.Listed
	}
	tw.Flush()
	for _, name := range unknown {
		fmt.Fprintf(w, "%s: no state (never used, or idle until its keys expired)\n", name)
	}
	if !listed {
		fmt.Fprintln(w, "holders: (not available)")
		return
	}
	for _, s := range states {
		if s.Listed {
			writeLists(w, s)
		}
	}
}

// writeLists prints the holders and waiters of s.
func writeLists(w io.Writer, s state) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\n%s holders:\nID\tWEIGHT\tTOKEN\tGRANTED\tLEASE END\tOWNER\tNOTE\n", s.Name)
	for _, h := range s.Holders {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", orDash(h.ID), h.Weight, h.Token, clock(h.GrantedAt), clock(h.LeaseEnd), orDash(h.Owner), orDash(h.Note))
	}
	if s.OmittedHolders > 0 {
		fmt.Fprintf(tw, "(%d more)\n", s.OmittedHolders)
	}
	fmt.Fprintf(tw, "\n%s waiters:\nPOS\tWEIGHT\tSINCE\tOWNER\tNOTE\n", s.Name)
	for _, x := range s.Waiters {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", x.Position, x.Weight, clock(x.Since), orDash(x.Owner), orDash(x.Note))
	}
	if s.OmittedWaiters > 0 {
		fmt.Fprintf(tw, "(%d more)\n", s.OmittedWaiters)
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clock prints t in local time, to the millisecond; "-" if unknown.
func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05.000")
}
