package diskbudget

import (
	"context"
	"time"
)

// Yielder holds disk it gives back when other work needs it: a node's
// pooled hot guests, which are there to start VMs sooner and must never
// keep one from starting.
type Yielder interface {
	// Yieldable is how many bytes Yield would give back at most now:
	// what the budget counts for them (promised and held on disk).
	Yieldable() int64
	// Yield gives back at least need bytes if it can (fewer when it
	// holds fewer), before ctx ends; it returns what it gave back.
	Yield(ctx context.Context, need int64) int64
}

// yieldWait bounds how long work waits for yielders to give room back.
const yieldWait = 2 * time.Minute

// RegisterYielder counts y's bytes as yieldable under name (replacing one
// of that name). A nil budget counts nothing.
func (b *Budget) RegisterYielder(name string, y Yielder) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.yielders[name] = y
}

// yield asks the yielders for the room work of n bytes lacks, when they
// hold enough of it; it reports whether they gave some back.
// When it reports true the room is kept for the work (no yielder's own
// work takes it) until the work calls taken.
func (b *Budget) yield(n int64) bool {
	b.mu.Lock()
	r, err := b.roomLocked()
	ys := make([]Yielder, 0, len(b.yielders))
	for _, y := range b.yielders {
		ys = append(ys, y)
	}
	short := n - r.Room
	if err != nil || short <= 0 || r.Yieldable < short {
		b.mu.Unlock()
		return false
	}
	b.asked += n
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), yieldWait)
	defer cancel()
	var gave int64
	for _, y := range ys {
		if gave >= short {
			break
		}
		gave += y.Yield(ctx, short-gave)
	}
	b.cfg.Log.Info("pooled work gave disk back", "needed", Size(short), "gave", Size(gave))
	if gave == 0 {
		b.taken(n)
	}
	return gave > 0
}

// taken ends what yield kept for work of n bytes: the work has reserved
// the room, or given up.
func (b *Budget) taken(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked -= n
}
