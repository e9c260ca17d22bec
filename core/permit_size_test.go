package core

import (
	"testing"
	"unsafe"
)

// The in-process backend allocates a Permit per Acquire, and garbage
// collection costs by the byte: keep it in the 32-byte size class.
func TestPermitSize(t *testing.T) {
	if n := unsafe.Sizeof(Permit{}); n > 32 {
		t.Fatalf("Permit is %d bytes, want at most 32", n)
	}
}
