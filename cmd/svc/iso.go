package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

func newISOCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "iso", Short: "ISO images to install from: upload, list, copy, describe, delete"}
	list := newListCmd(g, "List the ISOs of the namespace",
		func(ctx context.Context, cl *api.Client) ([]api.ISO, error) { return cl.ListISOs(ctx, g.namespace) },
		printISOs)
	upload := newUploadCmd(g, "ISO", "Upload an ISO 9660 image (streamed, with a progress bar)",
		"  svc iso upload build/mini-linux.iso",
		func(ctx context.Context, cl *api.Client, name string, r io.Reader, size int64) (string, error) {
			iso, err := cl.UploadISO(ctx, g.namespace, name, r, size)
			return fmt.Sprintf("iso %s uploaded: %s, %s", iso.Name, iso.Size, iso.Digest), err
		})
	get := newGetCmd(g, "Show an ISO",
		func(ctx context.Context, cl *api.Client, name string) (any, error) {
			return cl.GetISO(ctx, g.namespace, name)
		})
	copyCmd := newCopyCmd(g, "ISO", func(ctx context.Context, cl *api.Client, name string, req api.CopyRequest) error {
		_, err := cl.CopyISO(ctx, g.namespace, name, req)
		return err
	})
	describe := newDescribeCmd(g, "ISO", func(ctx context.Context, cl *api.Client, name, d string) error {
		_, err := cl.DescribeISO(ctx, g.namespace, name, d)
		return err
	})
	del := newDeleteCmd(g, "ISO", func(ctx context.Context, cl *api.Client, name string) error {
		return cl.DeleteISO(ctx, g.namespace, name)
	})
	cmd.AddCommand(list, upload, get, copyCmd, describe, del)
	return cmd
}

func printISOs(w io.Writer, isos []api.ISO) error {
	rows := make([][]string, 0, len(isos))
	for _, i := range isos {
		rows = append(rows, []string{i.Name, i.State, i.Size, i.SourceType, i.Digest[:min(len(i.Digest), 19)], i.Description})
	}
	return printTable(w, []string{"NAME", "STATE", "SIZE", "SOURCE", "DIGEST", "DESCRIPTION"}, rows)
}
