package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

// newRemoteCmd is 'svc remote list|pull|catalogs': the cluster's remote
// catalogs and copies from them.
func newRemoteCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "remote", Short: "Remote images and ISOs: the tags of the cluster's remote catalogs"}
	list := newListCmd(g, "List the remote images and ISOs the namespace can pull",
		func(ctx context.Context, cl *api.Client) ([]api.RemoteImage, error) {
			return cl.ListRemoteImages(ctx, g.namespace)
		},
		func(w io.Writer, items []api.RemoteImage) error {
			rows := make([][]string, 0, len(items))
			for _, it := range items {
				rows = append(rows, []string{it.Name, it.Type, it.Size, it.Source, it.Description})
			}
			return printTable(w, []string{"NAME", "TYPE", "SIZE", "SOURCE", "DESCRIPTION"}, rows)
		})
	cmd.AddCommand(list, newPullCmd(g, "remote"), newCatalogsCmd(g))
	return cmd
}

// newPullCmd is 'svc remote pull' or 'svc image pull': copy a remote image
// (or, with --iso, a remote ISO) into the namespace as a job.
func newPullCmd(g *globals, parent string) *cobra.Command {
	var newName string
	var iso, wait bool
	cmd := &cobra.Command{
		Use:     "pull NAME",
		Short:   "Copy a remote image (or ISO, with --iso) into the namespace (a job; see 'svc remote list')",
		Example: "  svc " + parent + " pull ubuntu-22.04 --new-name ubuntu --wait",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			pull := cl.PullRemoteImage
			if iso {
				pull = cl.PullRemoteISO
			}
			j, err := pull(cmd.Context(), g.namespace, args[0], newName)
			if err != nil {
				return err
			}
			return startedJob(cmd, cl, g.namespace, j.JobName, wait)
		},
	}
	cmd.Flags().StringVar(&newName, "new-name", "", "name of the copy (default: the remote's name)")
	cmd.Flags().BoolVar(&iso, "iso", false, "pull a remote ISO")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the job to end, with its progress")
	return cmd
}

// newCatalogsCmd is 'svc remote catalogs [--set REPO,...]' (admin).
func newCatalogsCmd(g *globals) *cobra.Command {
	var set []string
	var clear bool
	cmd := &cobra.Command{
		Use:     "catalogs",
		Short:   "Show, or with --set/--clear replace, the cluster's remote catalogs (OCI repositories; admin)",
		Example: "  svc remote catalogs --set registry.example.com:5000/os/images,registry.example.com:5000/os/isos",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var c api.RemoteCatalogs
			if len(set) > 0 || clear {
				c, err = cl.SetRemoteCatalogs(cmd.Context(), set)
			} else {
				c, err = cl.GetRemoteCatalogs(cmd.Context())
			}
			if err != nil {
				return err
			}
			if len(c.Repositories) > 0 {
				fmt.Fprintln(cmd.OutOrStdout(), strings.Join(c.Repositories, "\n"))
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&set, "set", nil, "replace the catalogs with these repositories (<registry>/<path>)")
	cmd.Flags().BoolVar(&clear, "clear", false, "remove every catalog")
	cmd.MarkFlagsMutuallyExclusive("set", "clear")
	return cmd
}
