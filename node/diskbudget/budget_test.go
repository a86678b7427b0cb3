package diskbudget

import (
	"context"
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

// fakeYielder is pooled work that holds promised bytes and gives them back.
type fakeYielder struct {
	held atomic.Int64
	asks atomic.Int32
}

func (y *fakeYielder) Growth() int64    { return y.held.Load() }
func (y *fakeYielder) Yieldable() int64 { return y.held.Load() }
func (y *fakeYielder) Yield(_ context.Context, need int64) int64 {
	y.asks.Add(1)
	gave := min(need+50*mib, y.held.Load()) // whole guests: more than asked
	y.held.Add(-gave)
	return gave
}

// Pooled work (hot guests) yields room to work that needs it, and only
// then: what fits without it is not asked, work that yields takes only the
// room nobody gives back, and what does not fit even with all of it is
// refused without asking.
func TestBudget_yielders_give_room_back(t *testing.T) {
	for _, tc := range []struct {
		name      string
		spare     bool
		need      int64
		fits      bool
		asked     bool
		heldAfter int64
	}{
		{"fits without", false, 100 * mib, true, false, 300 * mib},
		{"fits with what the pool gives back", false, 300 * mib, true, true, 50 * mib},
		{"more than the pool holds", false, 500 * mib, false, false, 300 * mib},
		{"work that yields takes only spare room", true, 300 * mib, false, false, 300 * mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBudget(500 * mib) // 400 MiB above the floor
			y := &fakeYielder{}
			y.held.Store(300 * mib)
			b.Register("hot guests", y)
			b.RegisterYielder("hot guests", y)
			reserve := b.Reserve
			if tc.spare {
				reserve = b.ReserveSpare
			}
			_, err := reserve("a deploy", tc.need, "")
			if (err == nil) != tc.fits || (y.asks.Load() > 0) != tc.asked || y.held.Load() != tc.heldAfter {
				t.Fatalf("Reserve(%d MiB) = %v, asked %d times, the pool holds %d MiB", tc.need/mib, err, y.asks.Load(), y.held.Load()/mib)
			}
		})
	}
}

// refillingYielder is a pool that refills as soon as it has given room
// back (a hot pool kicks its filler when it yields): its refill asks for
// spare room while the work it yielded to has yet to take it.
type refillingYielder struct {
	fakeYielder
	b       *Budget
	refills []error
}

func (y *refillingYielder) Yield(ctx context.Context, need int64) int64 {
	gave := y.fakeYielder.Yield(ctx, need)
	_, err := y.b.ReserveSpare("a hot guest refilled", gave, "")
	y.refills = append(y.refills, err)
	return gave
}

// The room pooled work gives back goes to the work that asked for it, not
// back to the pool: before, a hot pool's refill (spare room) took what its
// guest had just freed, and the upload that made it yield was refused 413
// (seen in make test: 780 MiB promised again right after the yield). Work
// that asks nothing of the pool leaves the spare room to it as before.
func TestBudget_yielded_room_goes_to_the_work_that_asked(t *testing.T) {
	for _, tc := range []struct {
		name       string
		need       int64
		fits       bool
		refillFits bool
	}{
		{"the work that asked takes the room", 300 * mib, true, false},
		{"the refill waits for it", 350 * mib, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBudget(500 * mib) // 400 MiB above the floor
			y := &refillingYielder{b: b}
			y.held.Store(300 * mib)
			b.Register("hot guests", y)
			b.RegisterYielder("hot guests", y)
			_, err := b.Reserve("an upload", tc.need, "")
			if (err == nil) != tc.fits {
				t.Fatalf("the upload of %d MiB: %v", tc.need/mib, err)
			}
			if len(y.refills) != 1 || (y.refills[0] == nil) != tc.refillFits {
				t.Fatalf("the refill during the yield: %v", y.refills)
			}
			if b.asked != 0 {
				t.Fatalf("%d bytes still kept for work that took them", b.asked)
			}
			// Once the work has its room, spare room is the pool's again.
			if _, err := b.ReserveSpare("a hot guest", 10*mib, ""); err != nil {
				t.Fatalf("spare room after the upload took its own: %v", err)
			}
		})
	}
}
