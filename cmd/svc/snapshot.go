package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/backup"
)

// newSnapshotCmd is 'svc cluster snapshot save|inspect|restore'.
func newSnapshotCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Back up and restore the cluster's state (admin)",
		Long: `A snapshot is the cluster's whole replicated state as of one Raft index:
users, namespaces, role bindings, images' and VMs' records, VM configs, the
CA and the keys that sign tokens and seal passwords. Disk images are not in
it: they live on the hosts (push them to a registry to back them up).

The file holds the cluster's secrets: anyone who has it can sign tokens as
the cluster. It is written readable by its owner only; keep it as you keep
the cluster's keys (an encrypted store, never a shared folder).`,
	}
	save := &cobra.Command{
		Use:   "save FILE",
		Short: "Save a snapshot of the cluster's state to FILE (written 0600; checked before it is kept)",
		Long: `Save a snapshot of the cluster's state to FILE: every write acknowledged before the
save was asked for, through whichever peer is asked (it is taken on the leader). The
file is written readable by its owner only and checked whole before it is kept.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			path := args[0]
			tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
			if err != nil {
				return err
			}
			defer os.Remove(tmp.Name()) // gone after the rename
			if err := tmp.Chmod(0o600); err != nil {
				_ = tmp.Close()
				return err
			}
			stale, _ := cmd.Flags().GetBool("stale")
			n, err := cl.SaveSnapshotWith(cmd.Context(), tmp, api.SnapshotSaveOptions{Stale: stale})
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("save the snapshot: %w", err)
			}
			h, _, err := checkSnapshot(tmp.Name())
			if err != nil {
				return fmt.Errorf("the snapshot the cluster sent is not whole (nothing kept): %w", err)
			}
			if err := os.Rename(tmp.Name(), path); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "saved a snapshot of cluster %s at index %d (term %d) to %s: %d bytes\n", h.ClusterID, h.Index, h.Term, path, n)
			fmt.Fprintln(cmd.ErrOrStderr(), "it holds the cluster's CA and signing keys: keep it as a secret")
			return nil
		},
	}
	save.Flags().Bool("stale", false, "save the state as the peer asked has applied it, without the leader (a cluster that lost its majority; it may lack the latest writes)")
	inspect := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Print a snapshot's header and how many records of each kind it holds, and check it is whole",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, counts, err := checkSnapshot(args[0])
			if err != nil {
				return err
			}
			if g.output != "table" {
				return printOut(cmd.OutOrStdout(), g.output, snapshotInfo{
					ClusterID: h.ClusterID, Index: h.Index, Term: h.Term, CreatedAt: h.CreatedAt, SVCVersion: h.SVCVersion,
					Peer: h.Peer, StateBytes: h.Size, Records: counts,
				}, nil)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "cluster:  %s\nindex:    %d\nterm:     %d\ntaken:    %s\nby peer:  %s\nsvc:      %s\nstate:    %d bytes\nchecksum: ok\n\n",
				h.ClusterID, h.Index, h.Term, h.CreatedAt.Format(time.RFC3339), h.Peer, h.SVCVersion, h.Size)
			rows := make([][]string, 0, len(counts))
			for _, c := range counts {
				rows = append(rows, []string{c.Kind, fmt.Sprint(c.N)})
			}
			return printTable(w, []string{"RECORDS", "COUNT"}, rows)
		},
	}
	addOutputFlag(inspect, g, "table")
	restore := &cobra.Command{
		Use:   "restore FILE",
		Short: "Make a snapshot of this cluster the state of every peer (its VMs follow: those not in it are removed, those in it are made again)",
		Long: `Restore a snapshot of this cluster into it, as it runs: the leader checks
the whole file before anything changes, then every peer takes its state.
Records made since the snapshot are gone; VMs whose records are gone are
removed from their hosts, and VMs of the snapshot that their hosts no longer
run are made again from their images. Who the peers are stays as it is now.

To form a new cluster from a snapshot when every host was lost, run
'svc agent --bootstrap-expect 1 --restore FILE' on a new host instead.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, _, err := checkSnapshot(args[0]); err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			got, err := cl.RestoreSnapshot(cmd.Context(), f)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), got.Message)
			return nil
		},
	}
	cmd.AddCommand(save, inspect, restore)
	return cmd
}

// snapshotInfo is what inspect prints as JSON or YAML (never the secret).
type snapshotInfo struct {
	ClusterID  string         `json:"clusterId"`
	Index      uint64         `json:"index"`
	Term       uint64         `json:"term"`
	CreatedAt  time.Time      `json:"createdAt"`
	SVCVersion string         `json:"svcVersion"`
	Peer       string         `json:"peer"`
	StateBytes int64          `json:"stateBytes"`
	Records    []backup.Count `json:"records"`
}

// checkSnapshot reads a snapshot file whole: its header, its records
// counted, its checksum checked.
func checkSnapshot(path string) (backup.Header, []backup.Count, error) {
	f, err := os.Open(path)
	if err != nil {
		return backup.Header{}, nil, err
	}
	defer f.Close()
	rd, err := backup.NewReader(f)
	if err != nil {
		return backup.Header{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	counts, cerr := backup.Counts(rd.Body())
	if err := rd.Verify(); err != nil {
		return rd.Header, nil, fmt.Errorf("%s: %w", path, err)
	}
	if cerr != nil {
		return rd.Header, nil, fmt.Errorf("%s: %w", path, errors.Join(backup.ErrCorrupt, cerr))
	}
	return rd.Header, counts, nil
}
