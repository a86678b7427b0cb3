package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

func newImageCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "List and upload disk images"}
	list := newListCmd(g, "List the images of the namespace",
		func(ctx context.Context, cl *api.Client) ([]api.Image, error) { return cl.ListImages(ctx, g.namespace) },
		printImages)

	var name string
	var quiet bool
	upload := &cobra.Command{
		Use:     "upload FILE",
		Short:   "Upload a qcow2 or raw disk image (streamed, with a progress bar)",
		Example: "  svc image upload build/mini-linux.qcow2 --name mini-linux",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				return err
			}
			if name == "" {
				name = filepath.Base(args[0])
			}
			if err := api.ValidateImageName("--name", name); err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			cl.HTTP.Timeout = 0 // big images take long; the transfer is bounded by the connection
			var r io.Reader = f
			if !quiet {
				bar := progressbar.DefaultBytes(st.Size(), "uploading "+name)
				r = io.TeeReader(f, bar)
				defer func() { _ = bar.Finish() }()
			}
			img, err := cl.UploadImage(cmd.Context(), g.namespace, name, r, st.Size())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "image %s uploaded: %s, %s on disk, %s\n", img.Name, img.Size, img.SpaceUsed, img.Digest)
			return nil
		},
	}
	upload.Flags().StringVar(&name, "name", "", "image name (default: the file name)")
	upload.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress bar")
	cmd.AddCommand(list, upload)
	return cmd
}

func printImages(w io.Writer, imgs []api.Image) error {
	rows := make([][]string, 0, len(imgs))
	for _, i := range imgs {
		rows = append(rows, []string{i.Name, i.Size, i.SpaceUsed, i.Type, i.SourceType, i.Digest[:min(len(i.Digest), 19)], i.Description})
	}
	return printTable(w, []string{"NAME", "SIZE", "USED", "TYPE", "SOURCE", "DIGEST", "DESCRIPTION"}, rows)
}
