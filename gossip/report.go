package gossip

import (
	"encoding/json"
	"fmt"
)

// Report is what a peer tells every other peer about itself. It travels as
// memberlist node metadata, so its JSON must stay under 512 bytes.
type Report struct {
	Addr     string `json:"ip"`
	APIAddr  string `json:"api"`
	RaftAddr string `json:"raft"`
	// TLSPort is the port of the HTTPS API on Addr.
	TLSPort int    `json:"tls,omitempty"`
	Arch    string `json:"arch"`
	// Hypervisor runs the peer's VMs (libvirt, vz, fake).
	Hypervisor string `json:"hv,omitempty"`
	Version    string `json:"ver"`
	// Level is the command level the peer's svc knows (raftfsm.Level).
	Level int `json:"lv,omitempty"`
	// CPU is what the peer offers: its CPUs times Overcommit.
	CPU         int     `json:"cpu"`
	Overcommit  float64 `json:"oc,omitempty"`
	MemoryBytes int64   `json:"mem"`
	GPU         int     `json:"gpu"`
	// HasState is true when the peer started with Raft state in its data dir;
	// a new cluster is only bootstrapped by peers that have none.
	HasState bool `json:"st,omitempty"`
	// Problem, when set, says why the peer cannot take VMs (its node is then
	// NOT READY even though the peer is alive).
	Problem string `json:"prob,omitempty"`
	// KeyEpoch is the epoch of the gossip keyring the peer has installed
	// (a key rotation waits for every peer's).
	KeyEpoch uint64 `json:"ke,omitempty"`
	// SharedStorage says the peer offers namespaces' shared storage; when it
	// does not, SharedStorageWhy says why (short: gossip metadata is small).
	SharedStorage    bool   `json:"sh,omitempty"`
	SharedStorageWhy string `json:"shw,omitempty"`
	// DiskRoom is what new work may take on the peer's data dir disk
	// (node/diskbudget), in steps of 64 MiB; DiskKnown says the peer
	// reports it.
	DiskRoom  int64 `json:"dr,omitempty"`
	DiskKnown bool  `json:"dk,omitempty"`
	// Raft is the peer's place in the Raft group as it knows it: RoleLeader,
	// RoleVoter, RoleReplica (a non-voter), or "" for none (it follows the
	// log through a member: node/follow). Followers read the log from the
	// members that report a role.
	Raft string `json:"rf,omitempty"`
}

// The peer's places in the Raft group, as Report.Raft gives them.
const (
	RoleLeader  = "leader"
	RoleVoter   = "voter"
	RoleReplica = "replica"
)

// maxProblem and maxSharedWhy bound Problem and SharedStorageWhy so that
// the report fits the metadata limit.
const (
	maxProblem   = 160
	maxSharedWhy = 80
)

func (r Report) encode(limit int) ([]byte, error) {
	if len(r.Problem) > maxProblem {
		r.Problem = r.Problem[:maxProblem]
	}
	if len(r.SharedStorageWhy) > maxSharedWhy {
		r.SharedStorageWhy = r.SharedStorageWhy[:maxSharedWhy]
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	// The why of no shared storage gives way first (the node's log has it
	// whole).
	for len(b) > limit && r.SharedStorageWhy != "" {
		r.SharedStorageWhy = r.SharedStorageWhy[:max(0, len(r.SharedStorageWhy)-(len(b)-limit))]
		if b, err = json.Marshal(r); err != nil {
			return nil, fmt.Errorf("encode report: %w", err)
		}
	}
	if len(b) > limit {
		return nil, fmt.Errorf("report is %d bytes, over the %d byte limit", len(b), limit)
	}
	return b, nil
}

func decodeReport(b []byte) (Report, error) {
	var r Report
	if len(b) == 0 {
		return r, nil
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("decode report: %w", err)
	}
	return r, nil
}
