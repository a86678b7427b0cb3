package diskbudget

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

const mib = 1 << 20

// fakeDisk is a file system's free space that tests move by hand.
type fakeDisk struct{ free atomic.Int64 }

func (d *fakeDisk) Free() (int64, error) { return d.free.Load(), nil }

func newBudget(free int64) (*Budget, *fakeDisk) {
	d := &fakeDisk{}
	d.free.Store(free)
	return New(Config{Dir: "/nowhere", Floor: 100 * mib, Free: d.Free, Name: "p1"}), d
}

func TestBudget_Reserve_cases(t *testing.T) {
	for _, tc := range []struct {
		name    string
		free    int64
		growers []int64
		holds   []int64
		need    int64
		fits    bool
	}{
		{"fits above the floor", 500 * mib, nil, nil, 400 * mib, true},
		{"the floor is never promised", 500 * mib, nil, nil, 401 * mib, false},
		{"what a VM disk may still grow by is promised", 500 * mib, []int64{300 * mib}, nil, 101 * mib, false},
		{"a grower that is full promises nothing", 500 * mib, []int64{-5}, nil, 400 * mib, true},
		{"work under way holds its bytes", 500 * mib, nil, []int64{200 * mib}, 201 * mib, false},
		{"shared folder and VM disks and work together", 1000 * mib, []int64{300 * mib, 200 * mib}, []int64{100 * mib}, 300 * mib, true},
		{"a disk past its floor refuses everything", 50 * mib, nil, nil, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBudget(tc.free)
			for i, g := range tc.growers {
				b.Register(string(rune('a'+i)), GrowerFunc(func() int64 { return g }))
			}
			for _, n := range tc.holds {
				if _, err := b.Reserve("earlier work", n, ""); err != nil {
					t.Fatal(err)
				}
			}
			h, err := b.Reserve("a pull", tc.need, "")
			if tc.fits != (err == nil) {
				t.Fatalf("Reserve(%d) = %v, want fits %v", tc.need, err, tc.fits)
			}
			if err != nil {
				var nr *NoRoomError
				if !errors.Is(err, ErrNoRoom) || !errors.As(err, &nr) || !strings.Contains(err.Error(), "a pull") || !strings.Contains(err.Error(), "kept free") {
					t.Fatalf("the refusal: %v", err)
				}
				return
			}
			h.Release()
			h.Release()
		})
	}
}

// A hold on a file counts only what the file does not hold yet; a hold
// let go counts nothing; a hold that grows past the room is refused.
func TestBudget_hold_on_a_path(t *testing.T) {
	b, _ := newBudget(1000 * mib)
	path := filepath.Join(t.TempDir(), "pull")
	h, err := b.Reserve("a pull", 300*mib, path)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := b.Room(); r.Promised != 300*mib {
		t.Fatalf("promised %d before the file", r.Promised)
	}
	if err := os.WriteFile(path, make([]byte, 2*mib), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, _ := b.Room(); r.Promised > 299*mib || r.Promised < 297*mib {
		t.Fatalf("promised %d with 2 MiB written", r.Promised)
	}
	if err := h.Grow(700 * mib); err == nil {
		t.Fatal("a hold grew past the room")
	}
	if err := h.Grow(100 * mib); err != nil {
		t.Fatal(err)
	}
	h.Release()
	if r, _ := b.Room(); r.Promised != 0 || r.Room != 900*mib {
		t.Fatalf("after the release: %+v", r)
	}
}
