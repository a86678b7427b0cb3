package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// newVersionCmd is 'svc version': this svc's version and, with a cluster
// configured, every peer's.
func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print this svc's version and command level, and each peer's when a cluster is configured",
		Long: `Print this svc's version and the command level it knows (the replicated
commands it can apply), and, when an API address is configured, every peer's
as the cluster knows them: in a cluster upgraded one host at a time, a
command of a new level is written only once every voter knows it
(docs/operations.md#upgrades).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "svc %s (command level %d)\n", version, raftfsm.Level)
			cl, err := g.client()
			if err != nil {
				return nil // no cluster configured: this svc's own is all there is
			}
			ci, err := cl.ClusterInfo(cmd.Context())
			if err != nil {
				return fmt.Errorf("the cluster's versions: %w", err)
			}
			fmt.Fprintln(w)
			rows := make([][]string, 0, len(ci.Peers))
			for _, p := range ci.Peers {
				ver, level := peerVersion(p)
				rows = append(rows, []string{p.Name, ver, level, p.Raft})
			}
			return printTable(w, []string{"PEER", "VERSION", "LEVEL", "RAFT"}, rows)
		},
	}
}

// peerVersion is a peer's svc version and command level as the tables
// print them (a peer before levels knew level 1).
func peerVersion(p api.ClusterPeer) (version, level string) {
	version = p.Version
	if version == "" {
		version = "(not reported)"
	}
	return version, fmt.Sprint(max(p.Level, 1))
}
