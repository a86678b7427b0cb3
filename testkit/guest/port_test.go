package guest

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePort_outside_the_kernels_range_and_held(t *testing.T) {
	lo, hi := ephemeralRange()
	seen := map[int]bool{}
	for range 20 {
		port := FreePort(t, "127.0.0.1")
		if port >= lo && port <= hi {
			t.Fatalf("port %d is in the ephemeral range %d-%d", port, lo, hi)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice while held", port)
		}
		seen[port] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", port, err)
		}
		_ = l.Close()
	}
}

func TestPortCandidates_cases(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi int
		in     []int
		out    []int
	}{
		{name: "linux default", lo: 32768, hi: 60999, in: []int{10000, 19999, 30000, 32767, 61000, 65535}, out: []int{9999, 20000, 29999, 32768, 45000, 60999}},
		{name: "iana", lo: 49152, hi: 65535, in: []int{10000, 40000, 49151}, out: []int{49152, 65535, 25000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[int]bool{}
			for _, p := range portCandidates(tc.lo, tc.hi) {
				got[p] = true
			}
			for _, p := range tc.in {
				if !got[p] {
					t.Errorf("%d missing", p)
				}
			}
			for _, p := range tc.out {
				if got[p] {
					t.Errorf("%d offered", p)
				}
			}
		})
	}
}
