package diskbudget

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrNoRoom is wrapped when work does not fit in the room above the floor.
var ErrNoRoom = errors.New("no room on the peer's disk")

// DefaultFloor is the free space kept for Raft's log and snapshots and the
// peer's logs when none is configured.
const DefaultFloor = 1 << 30

// Config configures a Budget.
type Config struct {
	// Dir is a directory on the file system the budget keeps (the data
	// dir).
	Dir string
	// Floor is kept free at all times (default DefaultFloor).
	Floor int64
	// Free reports the bytes the file system has free for the peer
	// (default: statfs of Dir).
	Free func() (int64, error)
	// Name is the peer's, for messages.
	Name string
	Log  *slog.Logger
	// Registry, when set, gets the budget's gauges.
	Registry prometheus.Registerer
}

// Grower is something made whose files may still grow within a bound.
type Grower interface {
	// Growth is how many more bytes its files may take: its bound less
	// what they hold now (0 or more).
	Growth() int64
}

// GrowerFunc is a Grower from a function.
type GrowerFunc func() int64

// Growth implements Grower.
func (f GrowerFunc) Growth() int64 { return f() }

// Budget is a peer's budget of its data dir's disk. Its methods may be
// called from many goroutines at once.
type Budget struct {
	cfg Config

	mu       sync.Mutex
	growers  map[string]Grower
	holds    map[*Hold]struct{}
	yielders map[string]Yielder
	// asked is the bytes of work that asked the yielders for room and
	// has not taken it yet: a yielder's own work (ReserveSpare) may not
	// take it back meanwhile (a hot pool refilling the room it just gave
	// an upload).
	asked int64
}

// New returns a Budget.
func New(cfg Config) *Budget {
	if cfg.Floor <= 0 {
		cfg.Floor = DefaultFloor
	}
	if cfg.Free == nil {
		dir := cfg.Dir
		cfg.Free = func() (int64, error) { return FreeBytes(dir) }
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	b := &Budget{cfg: cfg, growers: map[string]Grower{}, holds: map[*Hold]struct{}{}, yielders: map[string]Yielder{}}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "svc_disk_room_bytes",
				Help: "Bytes new work may still take on the data dir's disk: free, less the floor, less what VM disks and shared folders may still grow by and what work under way is about to write.",
			}, func() float64 { r, _ := b.Room(); return float64(r.Room) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "svc_disk_promised_bytes",
				Help: "Bytes the data dir's disk is promised beyond what it holds: what VM disks and shared folders may still grow by, and what work under way is about to write.",
			}, func() float64 { r, _ := b.Room(); return float64(r.Promised) }),
		)
	}
	return b
}

// Floor is the free space the budget keeps.
func (b *Budget) Floor() int64 { return b.cfg.Floor }

// Register counts a grower under name (replacing one of that name). A nil
// budget counts nothing.
func (b *Budget) Register(name string, g Grower) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.growers[name] = g
}

// Room is the budget at one moment.
type Room struct {
	// Free is what the file system has free; Floor what is kept;
	// Promised what growers may still take and holds are about to write.
	Free, Floor, Promised int64
	// Room is what new work may take: Free - Floor - Promised (below 0
	// when the disk is past its promises).
	Room int64
	// Yieldable is what yielders would give back for work that needs it
	// (counted in Promised or taken from Free now).
	Yieldable int64
}

func (r Room) String() string {
	return fmt.Sprintf("%s free, %s kept free for the cluster's log, %s promised to VM disks, shared folders and work under way",
		Size(r.Free), Size(r.Floor), Size(r.Promised))
}

// Room returns the budget now.
func (b *Budget) Room() (Room, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.roomLocked()
}

func (b *Budget) roomLocked() (Room, error) {
	free, err := b.cfg.Free()
	if err != nil {
		return Room{}, fmt.Errorf("free space of %s: %w", b.cfg.Dir, err)
	}
	var promised int64
	for _, g := range b.growers {
		promised += max(0, g.Growth())
	}
	for h := range b.holds {
		promised += h.left()
	}
	var yieldable int64
	for _, y := range b.yielders {
		yieldable += max(0, y.Yieldable())
	}
	return Room{Free: free, Floor: b.cfg.Floor, Promised: promised, Room: free - b.cfg.Floor - promised, Yieldable: yieldable}, nil
}

// Check says whether work that takes n bytes fits now, without holding
// them (a check before work whose bytes a grower counts once made): when
// it fits only with what yielders give back, they give it back first. A
// nil budget refuses nothing.
func (b *Budget) Check(what string, n int64) error {
	if b == nil {
		return nil
	}
	err := b.check(what, n)
	if err != nil && b.yield(n) {
		err = b.check(what, n)
		b.taken(n)
	}
	return err
}

func (b *Budget) check(what string, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fitsLocked(what, n)
}

func (b *Budget) fitsLocked(what string, n int64) error { return b.fitsBesideLocked(what, n, 0) }

// fitsBesideLocked says whether n bytes fit with keep bytes of the room
// left to others.
func (b *Budget) fitsBesideLocked(what string, n, keep int64) error {
	r, err := b.roomLocked()
	if err != nil {
		return err
	}
	r.Room -= keep
	if n > r.Room {
		return &NoRoomError{Peer: b.cfg.Name, What: what, Need: n, Room: r}
	}
	return nil
}

// Reserve holds n bytes for work about to write them, or refuses with a
// *NoRoomError (wrapping ErrNoRoom) when they do not fit. With path, the
// hold counts only what that file does not hold yet (its allocated
// blocks), so that a file being written is not counted twice. Release the
// hold once the work is done (its bytes then counted by the file system,
// or by a grower). When n fits only with what yielders give back (pooled
// hot guests), they give it back first. A nil budget holds nothing (a nil
// *Hold, whose methods do nothing).
func (b *Budget) Reserve(what string, n int64, path string) (*Hold, error) {
	if b == nil {
		return nil, nil
	}
	h, err := b.reserve(what, n, path, false)
	if err != nil && b.yield(n) {
		h, err = b.reserve(what, n, path, false)
		b.taken(n)
	}
	return h, err
}

// ReserveSpare is Reserve for work that itself yields to others (a hot
// guest): it takes only the room no yielder gives back, and none that
// yielders gave back to work that has yet to take it.
func (b *Budget) ReserveSpare(what string, n int64, path string) (*Hold, error) {
	if b == nil {
		return nil, nil
	}
	return b.reserve(what, n, path, true)
}

// reserve holds n bytes if they fit; spare work leaves what yielders gave
// back to others (asked).
func (b *Budget) reserve(what string, n int64, path string, spare bool) (*Hold, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keep int64
	if spare {
		keep = b.asked
	}
	if err := b.fitsBesideLocked(what, n, keep); err != nil {
		return nil, err
	}
	h := &Hold{b: b, what: what, n: n}
	if path != "" {
		h.paths = []string{path}
	}
	b.holds[h] = struct{}{}
	return h, nil
}

// Hold is bytes held for work under way.
type Hold struct {
	b    *Budget
	what string
	// guarded by b.mu
	n     int64
	paths []string
}

// left is what the hold still counts (under b.mu): what its files do not
// hold yet.
func (h *Hold) left() int64 {
	n := h.n
	for _, p := range h.paths {
		n -= Allocated(p)
	}
	return max(0, n)
}

// Track counts what the file at path holds against the hold from now on
// (a file the work writes, once its name is known). A nil hold tracks
// nothing.
func (h *Hold) Track(path string) {
	if h == nil {
		return
	}
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	h.paths = append(h.paths, path)
}

// StreamStep is how much a hold grows at a time as a write of unknown
// length passes what it holds (Wrote).
const StreamStep = 64 << 20

// Wrote tells the hold its work has written done bytes so far: once that
// passes what it holds, the hold grows by StreamStep (or more, to cover
// done), or refuses with the budget's *NoRoomError. A nil hold refuses
// nothing.
func (h *Hold) Wrote(done int64) error {
	if h == nil {
		return nil
	}
	h.b.mu.Lock()
	short := done - h.n
	h.b.mu.Unlock()
	if short < 0 {
		return nil
	}
	return h.Grow(short + StreamStep)
}

// Grow adds n bytes to the hold if they fit (a stream longer than was
// held), or refuses with a *NoRoomError. A nil hold grows as asked.
func (h *Hold) Grow(n int64) error {
	if h == nil {
		return nil
	}
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.fitsLocked(h.what, n); err != nil {
		return err
	}
	h.n += n
	return nil
}

// Release lets the hold go (more than once is fine).
func (h *Hold) Release() {
	if h == nil {
		return
	}
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	delete(h.b.holds, h)
}

// NoRoomError says that work does not fit, and by how much.
type NoRoomError struct {
	Peer string
	What string
	Need int64
	Room Room
}

func (e *NoRoomError) Error() string {
	return fmt.Sprintf("peer %s has no room on its disk for %s (%s): %s", e.Peer, e.What, Size(e.Need), e.Room)
}

// Unwrap makes the error an ErrNoRoom.
func (e *NoRoomError) Unwrap() error { return ErrNoRoom }

// FreeBytes is what the file system of dir has free for an unprivileged
// writer.
func FreeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// Allocated is the bytes a file takes on its file system (0 if it is not
// there).
func Allocated(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}

// Size formats bytes for a message ("1.5 GiB").
func Size(n int64) string {
	switch {
	case n < 0:
		return "-" + Size(-n)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	default:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	}
}

// Growers names the growers counted, sorted (for logs and tests).
func (b *Budget) Growers() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.growers))
	for n := range b.growers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
