package analyze

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// File format of a worker's timeline: the magic "DSEV1\n", then one record
// per grant of 2 little-endian int32 (Proc, Gor) and 6 int64 (AcqStart,
// Grant, RelStart, RelDone, ServerGrant, Token).
const magic = "DSEV1\n"

const recordSize = 2*4 + 6*8

// WriteEvents writes events in the file format above.
func WriteEvents(w io.Writer, events []Event) error {
	bw := bufio.NewWriter(w)
	if _, err := bw.WriteString(magic); err != nil {
		return err
	}
	var b [recordSize]byte
	for _, e := range events {
		le := binary.LittleEndian
		le.PutUint32(b[0:], uint32(e.Proc))
		le.PutUint32(b[4:], uint32(e.Gor))
		for i, v := range [6]int64{e.AcqStart, e.Grant, e.RelStart, e.RelDone, e.ServerGrant, e.Token} {
			le.PutUint64(b[8+8*i:], uint64(v))
		}
		if _, err := bw.Write(b[:]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadEvents reads a file written by WriteEvents and appends its events to
// dst.
func ReadEvents(r io.Reader, dst []Event) ([]Event, error) {
	br := bufio.NewReader(r)
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(br, head); err != nil {
		return dst, fmt.Errorf("analyze: reading header: %w", err)
	}
	if string(head) != magic {
		return dst, fmt.Errorf("analyze: bad header %q", head)
	}
	var b [recordSize]byte
	for {
		if _, err := io.ReadFull(br, b[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return dst, nil
			}
			return dst, fmt.Errorf("analyze: truncated record: %w", err)
		}
		le := binary.LittleEndian
		e := Event{Proc: int32(le.Uint32(b[0:])), Gor: int32(le.Uint32(b[4:]))}
		var v [6]int64
		for i := range v {
			v[i] = int64(le.Uint64(b[8+8*i:]))
		}
		e.AcqStart, e.Grant, e.RelStart, e.RelDone, e.ServerGrant, e.Token = v[0], v[1], v[2], v[3], v[4], v[5]
		dst = append(dst, e)
	}
}
