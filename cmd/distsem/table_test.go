package main

import (
	"strings"
	"testing"
	"time"
)

// Once a backend lists holders and waiters, the table shows them, with
// what was left out.
func TestTableListsHoldersAndWaiters(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	st := state{Name: "jobs", Stored: true, Limit: 2, InUse: 2, Waiting: 3, Listed: true,
		Holders:        []holder{{ID: "a.1", Weight: 2, Token: 7, GrantedAt: at, LeaseEnd: at.Add(10 * time.Second), Owner: "web-1:42", Note: "backup"}},
		Waiters:        []waiter{{Position: 0, Weight: 1, Since: at, Owner: "web-2:9"}},
		OmittedWaiters: 2}
	var b strings.Builder
	writeTable(&b, []state{st})
	for _, want := range []string{
		"a.1  2       7      2026-01-02 03:04:05.000  2026-01-02 03:04:15.000  web-1:42  backup",
		"0    1       2026-01-02 03:04:05.000  web-2:9  -",
		"(2 more)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "not available") {
		t.Errorf("the table says not available:\n%s", b.String())
	}
}
