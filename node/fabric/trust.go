package fabric

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"time"
)

// Errors of Trust.Check; compare with errors.Is.
var (
	// ErrNotMember: the name is not a peer the cluster admitted with that key.
	ErrNotMember = errors.New("not a peer of this cluster")
	// ErrRemoved: the cluster removed the peer that holds this key.
	ErrRemoved = errors.New("removed from the cluster")
)

// Removal records a peer the cluster removed: its name and key, when and
// by whom. A key once removed is never trusted again.
type Removal struct {
	Name  string    `json:"name"`
	KeyID string    `json:"keyId"`
	At    time.Time `json:"at"`
	By    string    `json:"by,omitempty"`
}

// RemovedError says which peer was removed, when and by whom.
type RemovedError struct{ Removal Removal }

func (e *RemovedError) Error() string {
	by := ""
	if e.Removal.By != "" {
		by = " by " + e.Removal.By
	}
	return fmt.Sprintf("peer %q was removed from the cluster at %s%s: its data dir cannot rejoin; clear it and join with a new token (svc cluster join-token create)",
		e.Removal.Name, e.Removal.At.UTC().Format(time.RFC3339), by)
}

func (e *RemovedError) Is(target error) bool { return target == ErrRemoved }

// TrustSet is the cluster's admitted peers (name to KeyID) and removed keys
// (KeyID to the removal) as of a Raft index.
type TrustSet struct {
	Index   uint64             `json:"index"`
	Members map[string]string  `json:"members"`
	Removed map[string]Removal `json:"removed,omitempty"`
}

// Check says whether name with key keyID is an admitted peer.
func (s TrustSet) Check(name, keyID string) error {
	if r, ok := s.Removed[keyID]; ok {
		return &RemovedError{Removal: r}
	}
	if want, ok := s.Members[name]; !ok || want != keyID {
		return fmt.Errorf("%w: %q with key %s", ErrNotMember, name, keyID)
	}
	return nil
}

// Trust is the peer's view of which peers it may talk to: the replicated
// state's admitted peers, kept also in a file of the data dir so that a
// peer restarted before its replica has caught up still knows them.
type Trust struct {
	path string

	mu      sync.RWMutex
	set     TrustSet
	changed chan struct{}
}

// OpenTrust reads the trust file at path (an empty set when there is none).
func OpenTrust(path string) (*Trust, error) {
	t := &Trust{path: path, set: TrustSet{Members: map[string]string{}}, changed: make(chan struct{})}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trust file: %w", err)
	}
	if err := json.Unmarshal(b, &t.set); err != nil {
		return nil, fmt.Errorf("trust file %s: %w", path, err)
	}
	if t.set.Members == nil {
		t.set.Members = map[string]string{}
	}
	return t, nil
}

// Check says whether name with key keyID is an admitted peer.
func (t *Trust) Check(name, keyID string) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.set.Check(name, keyID)
}

// Set returns a copy of the current set.
func (t *Trust) Set() TrustSet {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return TrustSet{Index: t.set.Index, Members: maps.Clone(t.set.Members), Removed: maps.Clone(t.set.Removed)}
}

// Index is the Raft index of the set.
func (t *Trust) Index() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.set.Index
}

// Changed is closed at the next change of the set.
func (t *Trust) Changed() <-chan struct{} {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.changed
}

// Update takes s if it is newer than the set held (a higher index), and
// keeps it in the file; it reports whether it took it.
func (t *Trust) Update(s TrustSet) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.Index <= t.set.Index && t.set.Index != 0 {
		return false, nil
	}
	if s.Members == nil {
		s.Members = map[string]string{}
	}
	s = TrustSet{Index: s.Index, Members: maps.Clone(s.Members), Removed: maps.Clone(s.Removed)}
	b, err := json.Marshal(s)
	if err != nil {
		return false, fmt.Errorf("trust file: %w", err)
	}
	if err := writeFileAtomic(t.path, b, 0o600); err != nil {
		return false, err
	}
	t.set = s
	close(t.changed)
	t.changed = make(chan struct{})
	return true, nil
}

// writeFileAtomic writes b to path through a temporary file, synced, then
// renamed over it.
func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
