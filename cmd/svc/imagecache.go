package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

// newImageCacheCmd is 'svc image cache add|list|remove': copies of an
// image on chosen nodes, ahead of the VMs that need it there.
func newImageCacheCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "cache", Short: "Copy an image to nodes ahead of the VMs that need it there, list and free those copies"}

	var nodes, tags []string
	var all, wait bool
	add := &cobra.Command{
		Use:   "add IMAGE (--node NODE ... | --tag TAG ... | --all)",
		Short: "Copy an image to the nodes named, to the nodes carrying a tag, or to every node (a job)",
		Example: "  svc image cache add mini-linux --tag ci --wait\n" +
			"  svc image cache add mini-linux --node mac-1 --node mac-2\n  svc image cache add mini-linux --all",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.ImageCacheRequest{Nodes: nodes, Tags: tags, All: all}
			given := 0
			for _, g := range []bool{len(nodes) > 0, len(tags) > 0, all} {
				if g {
					given++
				}
			}
			if given != 1 {
				return fmt.Errorf("pass one of --node, --tag or --all")
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			j, err := cl.CacheImage(cmd.Context(), g.namespace, args[0], req)
			if err != nil {
				return err
			}
			return startedJob(cmd, cl, g.namespace, j.JobName, wait)
		},
	}
	add.Flags().StringSliceVar(&nodes, "node", nil, "a node to copy the image to (repeat or comma-separate)")
	add.Flags().StringSliceVar(&tags, "tag", nil, "copy the image to every node carrying this tag (repeat or comma-separate)")
	add.Flags().BoolVar(&all, "all", false, "copy the image to every node of the namespace")
	add.Flags().BoolVar(&wait, "wait", false, "wait for the copies to end, with their progress")

	list := &cobra.Command{
		Use:   "list IMAGE",
		Short: "List the nodes that hold an image and the copies under way",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.clientFor()
			if err != nil {
				return err
			}
			c, err := cl.ImageCache(cmd.Context(), g.namespace, args[0])
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, c, func(w io.Writer) error { return printImageCache(w, c) })
		},
	}
	addOutputFlag(list, g, "table")

	var node string
	remove := &cobra.Command{
		Use:     "remove IMAGE --node NODE",
		Short:   "Free an image on a node (refused while a VM there uses it, or for the cluster's only copy)",
		Example: "  svc image cache remove mini-linux --node peer-2",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if node == "" {
				return fmt.Errorf("pass --node")
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			c, err := cl.UncacheImage(cmd.Context(), g.namespace, args[0], node)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "image %s freed on %s\n", args[0], node)
			return printImageCache(cmd.OutOrStdout(), c)
		},
	}
	remove.Flags().StringVar(&node, "node", "", "the node to free the image on")
	cmd.AddCommand(add, list, remove)
	return cmd
}

func printImageCache(w io.Writer, c api.ImageCache) error {
	rows := make([][]string, 0, len(c.Nodes)+len(c.Copies))
	for _, n := range c.Nodes {
		rows = append(rows, []string{n, "held", "-", "-"})
	}
	for _, cp := range c.Copies {
		progress := "-"
		if cp.BytesTotal > 0 {
			progress = fmt.Sprintf("%d%%", cp.BytesDone*100/cp.BytesTotal)
		}
		rows = append(rows, []string{cp.Node, "copying (" + cp.State + ")", progress, cp.Job})
	}
	return printTable(w, []string{"NODE", "STATE", "PROGRESS", "JOB"}, rows)
}
