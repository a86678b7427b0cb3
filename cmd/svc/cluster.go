package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newClusterCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Show the cluster"}
	info := &cobra.Command{
		Use:   "info",
		Short: "Show the cluster's leader, peers and their Raft roles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.clientFor()
			if err != nil {
				return err
			}
			ci, err := cl.ClusterInfo(cmd.Context())
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(cmd.OutOrStdout(), ci)
			}
			leader := ci.Leader
			if leader == "" {
				leader = "(none: the cluster has no quorum)"
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "cluster:  %s\nversion:  %s\nendpoint: %s\nleader:   %s\n\n", ci.ClusterID, ci.Version, ci.APIEndpoint, leader)
			rows := make([][]string, 0, len(ci.Peers))
			for _, p := range ci.Peers {
				rows = append(rows, []string{p.Name, p.Raft, p.APIAddr})
			}
			return printTable(w, []string{"PEER", "RAFT", "API"}, rows)
		},
	}
	info.Flags().StringVarP(&g.output, "output", "o", "table", "output format: table or json")
	cmd.AddCommand(info)
	return cmd
}
