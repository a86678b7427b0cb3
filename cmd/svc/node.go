package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

func newNodeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "node", Short: "List and tag the cluster's nodes"}
	var consistent bool
	list := newListCmd(g, "List the nodes of a namespace with their free and total resources",
		func(ctx context.Context, cl *api.Client) ([]api.Node, error) {
			return cl.ListNodes(ctx, g.namespace, consistent)
		},
		printNodes)
	list.Flags().BoolVar(&consistent, "consistent", false, "read through the leader instead of the local replica")

	tag := newTagCmd(g, "tag", "Add a tag to a node", false)
	untag := newTagCmd(g, "untag", "Remove a tag from a node", true)
	cmd.AddCommand(list, tag, untag, newNodeNamespaceCmd(g), newNodeCordonCmd(g, true), newNodeCordonCmd(g, false), newNodeDrainCmd(g), newNodeRemoveCmd(g), newNodeApproveCmd(g), newNodeSharedStorageCmd(g))
	return cmd
}

func newTagCmd(g *globals, use, short string, remove bool) *cobra.Command {
	return &cobra.Command{
		Use:   use + " NODE TAG",
		Short: short,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := api.ValidateTag(args[1]); err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			call := cl.TagNode
			if remove {
				call = cl.UntagNode
			}
			n, err := call(cmd.Context(), g.namespace, args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "node %s tags: [%s]\n", n.Name, strings.Join(n.Tags, ", "))
			return nil
		},
	}
}

func printNodes(w io.Writer, nodes []api.Node) error {
	rows := make([][]string, 0, len(nodes))
	for _, n := range nodes {
		tags := strings.Join(n.Tags, ",")
		if tags == "" {
			tags = "-"
		}
		rows = append(rows, []string{
			n.Name, n.Phase, n.NodeIP, n.Arch,
			strconv.Itoa(n.AvailableCPU) + "/" + strconv.Itoa(n.AllocatableCPU),
			n.AvailableMemory + "/" + n.AllocatableMemory,
			strconv.Itoa(n.AvailableGPU) + "/" + strconv.Itoa(n.AllocatableGPU),
			tags, schedulable(n),
		})
	}
	return printTable(w, []string{"NAME", "PHASE", "IP", "ARCH", "CPU", "MEMORY", "GPU", "TAGS", "SCHEDULING"}, rows)
}
