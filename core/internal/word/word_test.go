package word

import "testing"

func TestPackUnpackRoundTrip(t *testing.T) {
	for _, c := range []struct{ free, seq int64 }{
		{0, 0}, {1, 1}, {-FreeBias, 7}, {FreeBias - 1, SeqMax}, {-3, 1 << 40},
	} {
		w := Pack(c.free, c.seq)
		if w&Frozen != 0 {
			t.Fatalf("Pack(%d, %d) has the Frozen bit", c.free, c.seq)
		}
		if free, seq := Unpack(w); free != c.free || seq != c.seq {
			t.Fatalf("Unpack(Pack(%d, %d)) = %d, %d", c.free, c.seq, free, seq)
		}
	}
}

func TestReleaseAddsFree(t *testing.T) {
	w := Release(Pack(-2, 9), 5)
	if free, seq := Unpack(w); free != 3 || seq != 9 {
		t.Fatalf("after Release of 5: free %d, seq %d; want 3, 9", free, seq)
	}
}

func TestFits(t *testing.T) {
	if !Fits(FreeBias-1, -FreeBias, SeqMax-1) {
		t.Fatal("the largest values that fit do not")
	}
	for _, c := range [][3]int64{{FreeBias, 0, 0}, {1, -FreeBias - 1, 0}, {1, 0, SeqMax}} {
		if Fits(c[0], c[1], c[2]) {
			t.Fatalf("Fits(%d, %d, %d) = true", c[0], c[1], c[2])
		}
	}
}
