package raftfsm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"time"

	"github.com/svc-project/svc/api"
)

// ErrOtherCluster refuses a snapshot of another cluster where only one of
// this cluster will do (its keys are wrapped under another secret).
var ErrOtherCluster = errors.New("the snapshot is of another cluster")

// ErrBadSnapshot is wrapped by a refusal of a snapshot whose state is not
// one svc restores (no JSON of the state, a newer version, no cluster).
var ErrBadSnapshot = errors.New("the snapshot's state cannot be restored")

// decodeSnapshot reads an FSM snapshot (as Snapshot writes it). Maps the
// file sets to null, and records it sets to null, are left empty and out:
// nothing restored from a file may be a nil the state would trip on.
func decodeSnapshot(r io.Reader) (snapshotFile, error) {
	sf := snapshotFile{State: NewState()}
	if err := json.NewDecoder(r).Decode(&sf); err != nil {
		return sf, fmt.Errorf("%w: read the snapshot's state: %w", ErrBadSnapshot, err)
	}
	if sf.Version > snapshotVersion || sf.Level > Level {
		return sf, fmt.Errorf("%w: the snapshot's state is version %d of command level %d, newer than this svc understands (%d, level %d): restore it with the svc that saved it or a newer one", ErrBadSnapshot, sf.Version, sf.Level, snapshotVersion, Level)
	}
	if sf.State == nil || !sf.State.Initialized || sf.State.Fabric == nil {
		return sf, fmt.Errorf("%w: the snapshot holds no initialised cluster", ErrBadSnapshot)
	}
	noNils(sf.State)
	return sf, nil
}

// noNils makes every nil map of s's records an empty one and drops the
// nil records of its maps.
func noNils(s *State) {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Map || !f.CanSet() {
			continue
		}
		if f.IsNil() {
			f.Set(reflect.MakeMap(f.Type()))
			continue
		}
		if f.Type().Elem().Kind() != reflect.Pointer {
			continue
		}
		for _, k := range f.MapKeys() {
			if f.MapIndex(k).IsNil() {
				f.SetMapIndex(k, reflect.Value{})
			}
		}
	}
}

// SnapshotCluster reads the cluster id of an FSM snapshot.
func SnapshotCluster(r io.Reader) (string, error) {
	sf, err := decodeSnapshot(r)
	if err != nil {
		return "", err
	}
	return sf.State.ClusterID, nil
}

// RestoreInPlace reads a snapshot of this cluster and returns it as the
// snapshot to restore into the running cluster: every record as the
// snapshot has it, except the audit log, which goes on, and who the peers
// are, which is the cluster's now (the
// admitted and removed peers, the join tokens and gossip keys, and each live
// node's reported facts; an admin's settings of a node, its namespace, tags
// and cordon, are the snapshot's). Peers that joined after the snapshot
// keep their place; none taken out since comes back.
func (f *FSM) RestoreInPlace(r io.Reader) ([]byte, error) {
	sf, err := decodeSnapshot(r)
	if err != nil {
		return nil, err
	}
	f.mu.RLock()
	cur := f.state
	if cur.Fabric == nil || cur.ClusterID != sf.State.ClusterID {
		f.mu.RUnlock()
		return nil, fmt.Errorf("%w (%s; this is %s)", ErrOtherCluster, sf.State.ClusterID, cur.ClusterID)
	}
	st := sf.State
	st.Fabric = cur.Fabric.clone()
	// The audit log records what was done to the cluster, the restore
	// among it: it is kept, not rolled back.
	st.Audit, st.AuditSeq = slices.Clone(cur.Audit), cur.AuditSeq
	st.AuditAnonymous, st.AuditAnonymousSeen = slices.Clone(cur.AuditAnonymous), cur.AuditAnonymousSeen
	nodes := make(map[string]*Node, len(cur.Nodes))
	for name, n := range cur.Nodes {
		c := n.clone()
		if old, ok := st.Nodes[name]; ok {
			c.Namespace, c.Tags, c.Cordoned = old.Namespace, old.Tags, old.Cordoned
		}
		nodes[name] = c
	}
	// Readers have seen the index the replica is at: it does not go back.
	sf.Index = max(sf.Index, f.index)
	f.mu.RUnlock()
	st.Nodes = nodes
	return encodeSnapshot(sf)
}

// RestoreAsNewCluster reads a snapshot and returns it as the first state of
// a new cluster formed from it by the peer self: the snapshot's records,
// CA and keys, with self the one admitted peer and every other peer of the
// snapshot removed (their certificates are refused; a host of the old
// cluster comes back with a join token). The old nodes stay, without the
// templates and hot guests they held, as nodes that no longer report.
func RestoreAsNewCluster(r io.Reader, self PeerIdentity, now time.Time) (clusterID string, out []byte, err error) {
	sf, err := decodeSnapshot(r)
	if err != nil {
		return "", nil, err
	}
	st := sf.State
	fb := st.Fabric
	if fb.Removed == nil {
		fb.Removed = map[string]*PeerRemoval{}
	}
	for name, p := range fb.Peers {
		if p.KeyID != self.KeyID {
			fb.Removed[p.KeyID] = &PeerRemoval{Name: name, KeyID: p.KeyID, At: now.UTC(), By: "restore"}
		}
	}
	self.AdmittedAt = now.UTC()
	fb.Peers = map[string]*PeerIdentity{self.Name: &self}
	fb.TrustIndex = sf.Index
	for _, n := range st.Nodes {
		n.Templates, n.Hot, n.HotSpent = nil, nil, nil
		if n.Name != self.Name {
			n.Phase, n.PhaseReason, n.PhaseSince = api.PhaseNotReady, "its host has not reported since the cluster was formed from a snapshot", now.UTC()
		}
	}
	out, err = encodeSnapshot(sf)
	return st.ClusterID, out, err
}

// SnapshotFabric reads the fabric (CA and wrapped keys) of a snapshot.
func SnapshotFabric(r io.Reader) (clusterID string, fb Fabric, err error) {
	sf, err := decodeSnapshot(r)
	if err != nil {
		return "", Fabric{}, err
	}
	return sf.State.ClusterID, *sf.State.Fabric.clone(), nil
}

// SnapshotIndex reads the index an FSM snapshot was taken at (0 when it
// cannot tell).
func SnapshotIndex(b []byte) uint64 {
	var sf struct {
		Index uint64 `json:"index"`
	}
	_ = json.Unmarshal(b, &sf)
	return sf.Index
}

func encodeSnapshot(sf snapshotFile) ([]byte, error) {
	sf.Version, sf.Level = snapshotVersion, Level
	b, err := json.Marshal(sf)
	if err != nil {
		return nil, fmt.Errorf("encode the restored state: %w", err)
	}
	return b, nil
}
