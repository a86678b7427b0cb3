package peerbook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/svc-project/svc/gossip"
)

// File is the name of the remembered addresses in a peer's data dir.
const File = "peers.json"

// ErrJoinTimeout is returned by Join when no address answered in time.
var ErrJoinTimeout = errors.New("could not join the cluster")

// settle lets a burst of membership changes pass before the file is
// written again.
const settle = 500 * time.Millisecond

// Pool is the gossip pool a peer joins and whose members it remembers.
type Pool interface {
	// Addr is this peer's own gossip address.
	Addr() string
	Join(ctx context.Context, addrs []string) (int, error)
	Members() []gossip.Member
	// Changed is closed at the next change of the members.
	Changed() <-chan struct{}
}

// Config is what a Book is made of.
type Config struct {
	// Name is this peer's; DataDir holds the remembered addresses.
	Name, DataDir string
	// Join are the addresses the peer was told to join, Seeds those a
	// join token's answer named.
	Join, Seeds []string
	// Timeout bounds Join (default a minute).
	Timeout time.Duration
	Log     *slog.Logger
}

// Book is one peer's gossip addresses of its cluster.
type Book struct{ cfg Config }

// New returns the book of a peer.
func New(cfg Config) *Book {
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Book{cfg: cfg}
}

func (b *Book) path() string { return filepath.Join(b.cfg.DataDir, File) }

// Load returns the addresses remembered from the last run (none when the
// file is missing or unreadable).
func (b *Book) Load() []string {
	raw, err := os.ReadFile(b.path())
	if err != nil {
		return nil
	}
	var addrs []string
	if err := json.Unmarshal(raw, &addrs); err != nil {
		b.cfg.Log.Warn("ignoring unreadable peers file", "err", err)
		return nil
	}
	return addrs
}

// Save remembers addrs, replacing the file whole.
func (b *Book) Save(addrs []string) error {
	raw, err := json.Marshal(addrs)
	if err != nil {
		return fmt.Errorf("encode peers: %w", err)
	}
	tmp := b.path() + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("write peers: %w", err)
	}
	if err := os.Rename(tmp, b.path()); err != nil {
		return fmt.Errorf("write peers: %w", err)
	}
	return nil
}

// Addrs are the addresses of the peers this one may ask about the
// cluster: those it was told to join, those it remembers, and those of
// members (what gossip knows now, if anything), each once.
func (b *Book) Addrs(members []gossip.Member) []string {
	addrs := slices.Clone(b.cfg.Join)
	add := func(a string) {
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	for _, a := range b.Load() {
		add(a)
	}
	for _, m := range members {
		if m.Name != b.cfg.Name {
			add(m.GossipAddr)
		}
	}
	return addrs
}

// Join joins pool through the addresses it was told, those a join
// answered with and those it remembers (never its own), retrying with a
// growing pause until one answers. It returns nil once joined, when there
// is nobody to ask, or when ctx ends; ErrJoinTimeout (wrapped, with the
// last failure) when Timeout passed.
func (b *Book) Join(ctx context.Context, pool Pool) error {
	addrs := slices.Clone(b.cfg.Join)
	for _, a := range append(slices.Clone(b.cfg.Seeds), b.Load()...) {
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	addrs = slices.DeleteFunc(addrs, func(a string) bool { return a == pool.Addr() })
	if len(addrs) == 0 {
		return nil
	}
	deadline := time.Now().Add(b.cfg.Timeout)
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		n, err := pool.Join(ctx, addrs)
		if err == nil {
			b.cfg.Log.Info("joined the cluster", "contacted", n, "attempt", attempt)
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %d attempts over %s: %w", ErrJoinTimeout, attempt, b.cfg.Timeout, err)
		}
		b.cfg.Log.Warn("join failed, retrying", "addrs", addrs, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// Remember keeps the file in step with pool's live members until ctx
// ends: written when they change (after a burst settles), never emptied.
func (b *Book) Remember(ctx context.Context, pool Pool) {
	var last []string
	for {
		changed := pool.Changed()
		var addrs []string
		for _, m := range pool.Members() {
			if m.Name != b.cfg.Name && m.State == gossip.StateAlive {
				addrs = append(addrs, m.GossipAddr)
			}
		}
		if len(addrs) > 0 && !slices.Equal(addrs, last) {
			if err := b.Save(addrs); err != nil {
				b.cfg.Log.Warn("cannot remember peers", "err", err)
			} else {
				last = addrs
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(settle):
		}
	}
}
