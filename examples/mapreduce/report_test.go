package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A worker's reports round-trip through the JSON lines protocol.
func TestReportsRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := newReportWriter(&buf)
	w.send(report{Kind: kindStart, At: 100})
	w.send(report{Kind: kindEnd, At: 250})
	w.send(report{Kind: kindPage, Rows: 500, Sum: 12345})
	w.send(report{Kind: kindDone, PermitWait: 3 * time.Millisecond, Permits: 1, PoolWait: time.Millisecond})
	if !strings.HasPrefix(buf.String(), `{"kind":"start","at":100}`+"\n") {
		t.Errorf("first line %q", strings.SplitAfter(buf.String(), "\n")[0])
	}
	var c collector
	if err := c.read(0, &buf); err != nil {
		t.Fatal(err)
	}
	if c.pages != 1 || c.rows != 500 || c.sum != 12345 || c.permitWait != 3*time.Millisecond ||
		c.permits != 1 || c.poolWait != time.Millisecond || len(c.events) != 2 ||
		c.events[0] != (event{100, +1}) || c.events[1] != (event{250, -1}) {
		t.Errorf("collected pages %d rows %d sum %d permit wait %v permits %d pool wait %v events %v",
			c.pages, c.rows, c.sum, c.permitWait, c.permits, c.poolWait, c.events)
	}
}

// Anything but a well-formed report fails the job, naming the line: the
// old text format, unknown kinds and fields, missing instants, trailing
// data, reports after the end, and a worker that stops without its done
// report.
func TestReportsFailLoudly(t *testing.T) {
	const done = `{"kind":"done"}` + "\n"
	for _, tc := range []struct{ in, want string }{
		{"S 1700000000\n" + done, `line 1 "S 1700000000"`},
		{`{"kind":"begin","at":1}` + "\n" + done, `unknown report kind "begin"`},
		{`{"kind":"start"}` + "\n" + done, "start report without its instant"},
		{`{"kind":"page","rows":1,"pages":2}` + "\n" + done, `unknown field "pages"`},
		{`{"kind":"page","rows":"x"}` + "\n" + done, "line 1"},
		{`{"kind":"page"} {"kind":"page"}` + "\n" + done, "more than one value"},
		{"\n" + done, "line 1"},
		{done + `{"kind":"page"}` + "\n", "line 2"},
		{`{"kind":"page","rows":1}` + "\n", "without its done report"},
		{"", "without its done report"},
	} {
		var c collector
		err := c.read(0, strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("read(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}
