package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

// newNamespaceSharedStorageCmd is 'svc namespace shared-storage NAMESPACE
// [--max-size 50G | --off]'.
func newNamespaceSharedStorageCmd(g *globals) *cobra.Command {
	var size string
	var off, show bool
	cmd := &cobra.Command{
		Use:   "shared-storage NAMESPACE [--max-size 50G] [--off] [--show]",
		Short: "Turn a namespace's shared storage on (a folder on each node its VMs deployed with --shared-storage see at /shared) or off, or show it (admin)",
		Long: "Turns the namespace's shared storage on, bounded per node by --max-size (1G to 16T; a guest at\n" +
			"the bound gets \"No space left on device\"), or changes the bound; --off turns it off (refused\n" +
			"while its VMs use it; the nodes then delete its folders); --show shows the bound and what the\n" +
			"folder takes on each node. Each node has its own folder: a per-host cache, not cluster storage.",
		Example: "  svc namespace shared-storage team-a --max-size 100G\n  svc namespace shared-storage team-a --show\n  svc node shared-storage clear peer-2 team-a",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			ns := args[0]
			var out api.NamespaceSharedStorage
			switch {
			case off && (show || cmd.Flags().Changed("max-size")):
				return usageErrorf("--off takes neither --show nor --max-size")
			case off:
				if err := cl.DisableSharedStorage(cmd.Context(), ns); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "namespace %s: shared storage off; its nodes delete its folders\n", ns)
				return nil
			case show:
				out, err = cl.GetSharedStorage(cmd.Context(), ns)
			default:
				b, perr := api.ParseSize(size)
				if perr != nil {
					return usageErrorf("--max-size: %v", perr)
				}
				out, err = cl.SetSharedStorage(cmd.Context(), ns, b)
			}
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, out, func(w io.Writer) error { return printSharedStorage(w, out) })
		},
	}
	cmd.Flags().StringVar(&size, "max-size", "50G", "the bound of the folder on each node (1G to 16T)")
	cmd.Flags().BoolVar(&off, "off", false, "turn the namespace's shared storage off")
	cmd.Flags().BoolVar(&show, "show", false, "show the bound and each node's usage, change nothing")
	addOutputFlag(cmd, g, "table")
	return cmd
}

func printSharedStorage(w io.Writer, s api.NamespaceSharedStorage) error {
	fmt.Fprintf(w, "namespace %s: shared storage on, at most %s per node\n", s.Namespace, api.FormatSize(s.MaxBytes))
	rows := [][]string{}
	for _, n := range s.Nodes {
		rows = append(rows, []string{n.Node, api.FormatSize(n.UsedBytes), strconv.FormatInt(n.UsedBytes, 10)})
	}
	return printTable(w, []string{"NODE", "USED", "BYTES"}, rows)
}

// newNodeSharedStorageCmd is 'svc node shared-storage clear NODE NAMESPACE'.
func newNodeSharedStorageCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shared-storage",
		Short: "Work on a node's shared folders (admin)",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "clear NODE NAMESPACE",
		Short: "Empty the namespace's shared folder on the node (refused while VMs there use it) (admin)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if _, err := cl.ClearSharedStorage(cmd.Context(), args[1], args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "node %s: the shared folder of namespace %s is empty\n", args[0], args[1])
			return nil
		},
	})
	return cmd
}
