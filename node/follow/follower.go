package follow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svc-project/svc/raftfsm"
)

// Follower keeps an FSM up to date from the Feeds of the members it is
// given, one at a time.
type Follower struct {
	FSM *raftfsm.FSM
	// Sources returns the base URLs (https://host:port) of the members to
	// follow, the preferred first; asked again after every failure.
	Sources func() []string
	// HTTP reaches the members (the peers' fabric: TLS with this host's
	// certificate).
	HTTP *http.Client
	// Wait is how long one read waits for the next command (0:
	// DefaultWait).
	Wait time.Duration
	Log  *slog.Logger

	mu     sync.Mutex
	source string
	leader string
	seen   time.Time // the last answer of a source
	copies int       // states copied
}

// DefaultWait is a read's wait for the next command: well under MaxWait
// and under the HTTP servers' idle bounds.
const DefaultWait = 20 * time.Second

// Retry bounds: after a failed read the follower waits from retryMin,
// doubling, up to retryMax before it reads from the next source.
const (
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
)

// Status is what a follower knows of its place.
type Status struct {
	// Source is the member it reads from ("" before the first answer).
	Source string
	// Leader is the leader as that member last knew it.
	Leader string
	// Seen is when the source last answered.
	Seen time.Time
	// Copies counts the states it copied whole (the first, then one per
	// read of compacted entries).
	Copies int
}

// Status returns where the follower stands.
func (f *Follower) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Status{Source: f.source, Leader: f.leader, Seen: f.seen, Copies: f.copies}
}

// Run follows until ctx ends, moving to the next source after a failure.
func (f *Follower) Run(ctx context.Context) error {
	log := f.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	backoff := retryMin
	for k := 0; ; k++ {
		srcs := f.Sources()
		if len(srcs) == 0 {
			log.Debug("following the log: no member known yet")
		} else {
			src := srcs[k%len(srcs)]
			err := f.follow(ctx, src)
			if ctx.Err() == nil {
				log.Warn("following the log: a source failed; trying the next", "source", src, "err", err)
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !f.Status().Seen.IsZero() && time.Since(f.Status().Seen) < retryMax {
			backoff = retryMin // the source answered lately: a new one at once
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, retryMax)
	}
}

// follow reads src's feed until a read fails.
func (f *Follower) follow(ctx context.Context, src string) error {
	if f.FSM.Index() == 0 {
		if err := f.copyState(ctx, src); err != nil {
			return err
		}
	}
	next := f.FSM.Index() + 1
	for {
		b, err := f.read(ctx, src, next)
		if errors.Is(err, ErrCompacted) {
			if err := f.copyState(ctx, src); err != nil {
				return err
			}
			next = f.FSM.Index() + 1
			continue
		}
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.source, f.leader, f.seen = src, b.Leader, time.Now()
		f.mu.Unlock()
		for _, e := range b.Entries {
			if e.Index <= f.FSM.Index() {
				continue // applied already (from a copied state)
			}
			f.FSM.Apply(&raft.Log{Index: e.Index, Term: e.Term, Type: raft.LogCommand, Data: e.Data})
		}
		if b.Next > next {
			next = b.Next
		}
	}
}

// read asks src for the commands from next on.
func (f *Follower) read(ctx context.Context, src string, next uint64) (Batch, error) {
	wait := f.Wait
	if wait <= 0 {
		wait = DefaultWait
	}
	q := url.Values{"from": {strconv.FormatUint(next, 10)}, "wait": {wait.String()}, "leader": {f.Status().Leader}}
	rctx, cancel := context.WithTimeout(ctx, wait+10*time.Second)
	defer cancel()
	resp, err := f.get(rctx, src+LogPath+"?"+q.Encode())
	if err != nil {
		return Batch{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusGone {
		return Batch{}, fmt.Errorf("%s: entries from %d: %w", src, next, ErrCompacted)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return Batch{}, fmt.Errorf("%s: read the log from %d: %s: %s", src, next, resp.Status, msg)
	}
	var b Batch
	if err := json.NewDecoder(io.LimitReader(resp.Body, 2*MaxBatchBytes+1<<20)).Decode(&b); err != nil {
		return Batch{}, fmt.Errorf("%s: read the log from %d: %w", src, next, err)
	}
	for i, e := range b.Entries {
		if e.Index < next || (i > 0 && e.Index <= b.Entries[i-1].Index) || e.Index >= b.Next {
			return Batch{}, fmt.Errorf("%s: read the log from %d: entry %d out of order", src, next, e.Index)
		}
	}
	return b, nil
}

// copyStateWait bounds the copy of a member's whole state.
const copyStateWait = 2 * time.Minute

// copyState replaces the FSM's state with src's.
func (f *Follower) copyState(ctx context.Context, src string) error {
	cctx, cancel := context.WithTimeout(ctx, copyStateWait)
	defer cancel()
	resp, err := f.get(cctx, src+StatePath)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("%s: copy the state: %s: %s", src, resp.Status, msg)
	}
	if err := f.FSM.Restore(resp.Body); err != nil {
		return fmt.Errorf("%s: copy the state: %w", src, err)
	}
	f.mu.Lock()
	f.copies++
	f.source, f.seen = src, time.Now()
	f.mu.Unlock()
	return nil
}

func (f *Follower) get(ctx context.Context, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	hc := f.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	return hc.Do(req)
}
