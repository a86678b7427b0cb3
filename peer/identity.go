package peer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/svc-project/svc/backup"
	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/node/membership"
	"github.com/svc-project/svc/node/peerlink"
	"github.com/svc-project/svc/node/snapshots"
)

// ErrNotAMember is returned by Start on a host that is not a peer of a
// cluster and was given neither a cluster to form nor a join token.
var ErrNotAMember = errors.New("this host is not a peer of any cluster: form one (--bootstrap-expect 1, or --dev) or join one (--join ADDR --join-token TOKEN, a token from 'svc cluster join-token create')")

// fabricDir is where a peer keeps its identity.
func fabricDir(dataDir string) string { return filepath.Join(dataDir, "fabric") }

// netHost is who this peer is on the network.
func (p *Peer) netHost() membership.Host {
	var raft string
	if p.store != nil {
		raft = p.store.Addr()
	} else {
		raft = p.raftL.Addr().String() // before the store runs on it
	}
	return membership.Host{Name: p.cfg.Name, Addr: p.cfg.Bind, RaftAddr: raft}
}

// openIdentity loads this peer's identity, or makes one: it forms a new
// cluster (BootstrapExpect 1) or joins one with the join token. It reports
// whether the identity was there (the peer restarted: it must ask the
// cluster whether it may come back, as a removed peer may not), and the
// gossip addresses a join answered with.
func (p *Peer) openIdentity() (restarted bool, seeds []string, err error) {
	dir := fabricDir(p.cfg.DataDir)
	id, err := fabric.LoadIdentity(dir)
	restarted = err == nil
	switch {
	case err == nil && p.cfg.Restore != "":
		return false, nil, fmt.Errorf("--restore forms a new cluster, but data dir %s holds a peer of cluster %s already: use an empty data dir, or restore into the running cluster with 'svc cluster snapshot restore'", p.cfg.DataDir, id.ClusterID)
	case err == nil:
		if p.cfg.JoinToken != "" {
			p.cfg.Log.Info("this peer is a member of its cluster already; the join token is not used", "cluster", id.ClusterID)
		}
	case !errors.Is(err, fabric.ErrNoIdentity):
		return false, nil, err
	case hasRaftState(p.cfg.DataDir):
		return false, nil, fmt.Errorf("data dir %s holds Raft state but no cluster identity: an svc from before peers authenticated each other made it; form a new cluster in an empty data dir", p.cfg.DataDir)
	case p.cfg.JoinToken != "":
		jctx, cancel := context.WithTimeout(p.ctx, p.cfg.JoinTimeout+time.Minute)
		defer cancel()
		id, seeds, err = membership.Join(jctx, membership.JoinConfig{
			Dir: dir, Host: p.netHost(), Addrs: p.cfg.Join, Token: p.cfg.JoinToken, Dial: peerlink.Dialer(p.cfg.Gate), Timeout: p.cfg.JoinTimeout, Log: p.cfg.Log,
		})
		if err != nil {
			return false, nil, fmt.Errorf("join the cluster: %w", err)
		}
		if id.Secret() == nil {
			p.cfg.Log.Warn("joined the cluster pending: this peer takes no VMs and answers no API call until an admin approves it", "cluster", id.ClusterID,
				"approve", "svc node approve "+p.cfg.Name)
		} else {
			p.cfg.Log.Info("joined the cluster: admitted with the join token", "cluster", id.ClusterID)
		}
	case p.cfg.Restore != "" && p.cfg.BootstrapExpect != 1:
		return false, nil, errors.New("--restore forms a new cluster: it needs --bootstrap-expect 1")
	case p.cfg.Restore != "":
		var h backup.Header
		if id, h, err = snapshots.FormCluster(p.cfg.Restore, dir, p.netHost(), time.Now()); err != nil {
			return false, nil, err
		}
		p.cfg.Log.Warn("forming a cluster from a snapshot", "cluster", id.ClusterID, "snapshot_index", h.Index, "snapshot_taken", h.CreatedAt,
			"snapshot_svc", h.SVCVersion, "ca", id.CAFingerprint())
	case p.cfg.BootstrapExpect == 1:
		if id, err = membership.Form(dir, p.netHost(), time.Now()); err != nil {
			return false, nil, err
		}
		p.cfg.Log.Info("formed a new cluster", "cluster", id.ClusterID, "ca", id.CAFingerprint())
	default:
		return false, nil, ErrNotAMember
	}
	p.id = id
	if p.trust, err = fabric.OpenTrust(filepath.Join(dir, fabric.FileTrust)); err != nil {
		return false, nil, err
	}
	return restarted, seeds, nil
}

func hasRaftState(dataDir string) bool {
	st, err := os.Stat(filepath.Join(dataDir, "raft", "raft.db"))
	return err == nil && st.Size() > 0
}
