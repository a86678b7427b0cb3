package sharedstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"time"

	"github.com/svc-project/svc/raftfsm"
)

// Proposer writes a command through the cluster's leader.
type Proposer interface {
	Apply(ctx context.Context, t raftfsm.Type, body any) (any, error)
}

// KeeperConfig is a keeper's setting.
type KeeperConfig struct {
	// Name is this node's name.
	Name     string
	Store    *Store
	FSM      *raftfsm.FSM
	Proposer Proposer
	// Interval is how often the keeper looks (10 s when 0), besides every
	// change of a namespace.
	Interval time.Duration
	// RoomChanged, when set, is called when the host's room for shared
	// folders comes or goes (Room): the node's gossip report says it.
	RoomChanged func()
	Log         *slog.Logger
}

// Keeper keeps a host's shared folders in step with the cluster: it removes
// the folders of namespaces whose shared storage is off (or which are
// gone), reports what each folder takes, and clears one on request.
type Keeper struct {
	cfg   KeeperConfig
	roomy bool // whether the last pass found room (Room)
}

// NewKeeper returns a keeper; Run starts it.
func NewKeeper(cfg KeeperConfig) *Keeper {
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Keeper{cfg: cfg, roomy: true}
}

// usageStep is the change of a folder's usage worth a report.
const usageStep = 1 << 20

// Run keeps the folders until ctx ends, then unmounts those no VM uses.
func (k *Keeper) Run(ctx context.Context) {
	tick := time.NewTicker(k.cfg.Interval)
	defer tick.Stop()
	for {
		changed := k.cfg.FSM.Watch(raftfsm.ResourceTopic("namespace"))
		if err := k.pass(ctx); err != nil && ctx.Err() == nil {
			k.cfg.Log.Warn("shared folders", "err", err)
		}
		select {
		case <-ctx.Done():
			k.unmountIdle()
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

// pass notes whether the host's room for folders came or went, then syncs.
// Run's goroutine only.
func (k *Keeper) pass(ctx context.Context) error {
	if roomy := k.cfg.Store.Room() == nil; roomy != k.roomy {
		k.roomy = roomy
		if k.cfg.RoomChanged != nil {
			k.cfg.RoomChanged()
		}
	}
	return k.sync(ctx)
}

// sync removes the folders of namespaces without shared storage and
// reports the usage of the others when it differs from the node's record.
func (k *Keeper) sync(ctx context.Context) error {
	nss, err := k.cfg.Store.Namespaces()
	if err != nil {
		return err
	}
	on := k.cfg.FSM.SharedStorageNamespaces()
	usage := map[string]int64{}
	for _, ns := range nss {
		if _, ok := on[ns]; !ok {
			if users := k.cfg.FSM.SharedStorageUsers(k.cfg.Name, ns); len(users) > 0 {
				continue // cannot be: turning it off waits for them
			}
			if err := k.cfg.Store.Remove(ctx, ns); err != nil {
				k.cfg.Log.Warn("remove a shared folder", "namespace", ns, "err", err)
			}
			continue
		}
		if b, ok := k.cfg.Store.Usage(ns); ok {
			usage[ns] = b
		}
	}
	var recorded map[string]int64
	if n, ok := k.cfg.FSM.Node(k.cfg.Name); ok {
		recorded = n.SharedUsage
	}
	if !worthReporting(recorded, usage) {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := k.cfg.Proposer.Apply(rctx, raftfsm.TypeNodeSharedUsage, raftfsm.NodeSharedUsage{Node: k.cfg.Name, Usage: usage}); err != nil {
		return fmt.Errorf("report shared folders' usage: %w", err)
	}
	return nil
}

// worthReporting says whether usage differs from what the node's record
// holds by a folder or by usageStep.
func worthReporting(recorded, usage map[string]int64) bool {
	if len(usage) != len(recorded) {
		return true
	}
	for ns, b := range usage {
		last, ok := recorded[ns]
		if !ok || b-last >= usageStep || last-b >= usageStep {
			return true
		}
	}
	return false
}

// Room says whether the host has room for a shared folder (Store.Room).
func (k *Keeper) Room() error { return k.cfg.Store.Room() }

// Clear empties namespace ns's folder on this node, refused while a VM of
// it here uses the folder.
func (k *Keeper) Clear(ctx context.Context, ns string) error {
	max, ok := k.cfg.FSM.SharedStorageNamespaces()[ns]
	if !ok {
		return raftfsm.NewRuleError(raftfsm.ErrNotFound, fmt.Sprintf("namespace %q has no shared storage", ns))
	}
	if users := k.cfg.FSM.SharedStorageUsers(k.cfg.Name, ns); len(users) > 0 {
		return raftfsm.NewRuleError(raftfsm.ErrConflict, fmt.Sprintf("the shared folder of namespace %q on node %s is in use by its VMs %s: delete or stop-and-delete them first",
			ns, k.cfg.Name, strings.Join(users, ", ")))
	}
	if err := k.cfg.Store.Clear(ctx, ns, max); err != nil {
		return err
	}
	// The node's record shows the emptied folder from now on.
	if err := k.sync(ctx); err != nil {
		k.cfg.Log.Warn("report shared folders' usage after a clear", "err", err)
	}
	return nil
}

// unmountIdle unmounts the folders no VM holds open, as the peer stops
// (their images stay; the next start mounts them again). A folder a running
// guest holds stays mounted: a second mount of its image would be a second
// file system writing the same blocks.
func (k *Keeper) unmountIdle() {
	nss, _ := k.cfg.Store.Namespaces()
	for _, ns := range nss {
		err := k.cfg.Store.Unmount(ns)
		switch {
		case err == nil:
		case errors.Is(err, syscall.EBUSY):
			k.cfg.Log.Info("shared folder left mounted: a VM uses it", "namespace", ns)
		default:
			k.cfg.Log.Warn("unmount a shared folder", "namespace", ns, "err", err)
		}
	}
}
