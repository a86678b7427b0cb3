package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

func newImageCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "Disk images: list, upload, generate, copy, describe, download, delete, cache on nodes"}
	list := newListCmd(g, "List the images of the namespace",
		func(ctx context.Context, cl *api.Client) ([]api.Image, error) { return cl.ListImages(ctx, g.namespace) },
		printImages)
	upload := newUploadCmd(g, "image", "Upload a qcow2 or raw disk image (streamed, with a progress bar)",
		"  svc image upload build/mini-linux.qcow2 --name mini-linux",
		func(ctx context.Context, cl *api.Client, name string, r io.Reader, size int64) (string, error) {
			img, err := cl.UploadImage(ctx, g.namespace, name, r, size)
			return fmt.Sprintf("image %s uploaded: %s, %s on disk, %s", img.Name, img.Size, img.SpaceUsed, img.Digest), err
		})

	var size, description string
	generate := &cobra.Command{
		Use:     "generate NAME --size SIZE",
		Short:   "Make an empty qcow2 image (a disk to install an OS on from an ISO, or extra storage)",
		Example: "  svc image generate blank-10g --size 10G",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			img, err := cl.GenerateImage(cmd.Context(), g.namespace, api.GenerateImageRequest{Name: args[0], Size: size, Description: description})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "image %s generated: %s\n", img.Name, img.Size)
			return nil
		},
	}
	generate.Flags().StringVar(&size, "size", "", "virtual size, e.g. 10G or 512M")
	generate.Flags().StringVar(&description, "description", "", "description")
	_ = generate.MarkFlagRequired("size")

	get := newGetCmd(g, "Show an image (its state while a commit or save writes it)",
		func(ctx context.Context, cl *api.Client, name string) (any, error) {
			return cl.GetImage(ctx, g.namespace, name)
		})
	copyCmd := newCopyCmd(g, "image", func(ctx context.Context, cl *api.Client, name string, req api.CopyRequest) error {
		_, err := cl.CopyImage(ctx, g.namespace, name, req)
		return err
	})
	describe := newDescribeCmd(g, "image", func(ctx context.Context, cl *api.Client, name, d string) error {
		_, err := cl.DescribeImage(ctx, g.namespace, name, d)
		return err
	})
	del := newDeleteCmd(g, "image", func(ctx context.Context, cl *api.Client, name string) error {
		return cl.DeleteImage(ctx, g.namespace, name)
	})
	cmd.AddCommand(list, upload, generate, get, copyCmd, describe, newImageDownloadCmd(g), del, newImageCacheCmd(g),
		newPushCmd(g, "image", func(ctx context.Context, cl *api.Client, name, ref string) (api.JobName, error) {
			return cl.PushImage(ctx, g.namespace, name, ref)
		}), newPullCmd(g, "image"))
	return cmd
}

func printImages(w io.Writer, imgs []api.Image) error {
	rows := make([][]string, 0, len(imgs))
	for _, i := range imgs {
		rows = append(rows, []string{i.Name, i.State, i.Size, i.SpaceUsed, i.Type, i.SourceType, i.Digest[:min(len(i.Digest), 19)], i.Description})
	}
	return printTable(w, []string{"NAME", "STATE", "SIZE", "USED", "TYPE", "SOURCE", "DIGEST", "DESCRIPTION"}, rows)
}

// newImageDownloadCmd downloads an image's disk to a file, with a progress
// bar; a partial file from a broken download is resumed, and the result is
// checked against the image's digest.
func newImageDownloadCmd(g *globals) *cobra.Command {
	var out string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "download NAME [-f FILE]",
		Short: "Download an image's disk (resumes a partial file; checks the digest)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			cl.HTTP.Timeout = 0 // a big disk takes long; the transfer is bounded by the connection
			if out == "" {
				img, err := cl.GetImage(cmd.Context(), g.namespace, args[0])
				if err != nil {
					return err
				}
				out = img.Name
				if !strings.Contains(out, ".") {
					out += ".qcow2"
				}
			}
			f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			defer f.Close()
			offset, err := f.Seek(0, io.SeekEnd)
			if err != nil {
				return err
			}
			body, n, digest, err := cl.DownloadImage(cmd.Context(), g.namespace, args[0], offset)
			if err != nil {
				return err
			}
			defer body.Close()
			var w io.Writer = f
			if !quiet {
				bar := progressbar.DefaultBytes(offset+n, "downloading "+args[0])
				_ = bar.Set64(offset)
				w = io.MultiWriter(f, bar)
				defer func() { _ = bar.Finish() }()
			}
			if _, err := io.Copy(w, body); err != nil {
				return fmt.Errorf("download broke off (run the command again to resume): %w", err)
			}
			if err := f.Sync(); err != nil {
				return err
			}
			if err := checkDigest(out, digest); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\nimage %s downloaded to %s (%s)\n", args[0], out, digest)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "file", "f", "", "file to write (default: the image's name); a partial file is resumed")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress bar")
	return cmd
}

// checkDigest compares a file's sha256 with digest ("sha256:...").
func checkDigest(path, digest string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != digest {
		return fmt.Errorf("%s hashes to %s, not the image's %s: remove it and download again", path, got, digest)
	}
	return nil
}

// newUploadCmd is 'svc image|iso upload FILE [--name N]', streamed with a
// progress bar; send uploads and says what was made.
func newUploadCmd(g *globals, kind, short, example string, send func(ctx context.Context, cl *api.Client, name string, r io.Reader, size int64) (string, error)) *cobra.Command {
	var name string
	var quiet bool
	cmd := &cobra.Command{
		Use:     "upload FILE",
		Short:   short,
		Example: example,
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
			cl.HTTP.Timeout = 0 // big files take long; the transfer is bounded by the connection
			var r io.Reader = f
			if !quiet {
				bar := progressbar.DefaultBytes(st.Size(), "uploading "+name)
				r = io.TeeReader(f, bar)
				defer func() { _ = bar.Finish() }()
			}
			msg, err := send(cmd.Context(), cl, name, r, st.Size())
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", kind+" name (default: the file name)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress bar")
	return cmd
}

// newGetCmd is 'svc <kind> get NAME': the record, as JSON by default.
func newGetCmd(g *globals, short string, fetch func(ctx context.Context, cl *api.Client, name string) (any, error)) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.clientFor()
			if err != nil {
				return err
			}
			v, err := fetch(cmd.Context(), cl, args[0])
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, v, nil)
		},
	}
	addOutputFlag(cmd, g, "json")
	return cmd
}

// newCopyCmd is 'svc image|iso copy NAME NEW_NAME [--description D]'.
func newCopyCmd(g *globals, kind string, run func(ctx context.Context, cl *api.Client, name string, req api.CopyRequest) error) *cobra.Command {
	var description string
	cmd := &cobra.Command{
		Use:   "copy NAME NEW_NAME",
		Short: "Give the " + kind + "'s content a second name (no data is copied)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			req := api.CopyRequest{NewName: args[1]}
			if cmd.Flags().Changed("description") {
				req.Description = &description
			}
			if err := run(cmd.Context(), cl, args[0], req); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s copied to %s\n", kind, args[0], args[1])
			return nil
		},
	}
	cmd.Flags().StringVar(&description, "description", "", "the copy's description (default: the original's)")
	return cmd
}

// newDescribeCmd is 'svc image|iso describe NAME DESCRIPTION'.
func newDescribeCmd(g *globals, kind string, run func(ctx context.Context, cl *api.Client, name, description string) error) *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME DESCRIPTION",
		Short: "Set the " + kind + "'s description",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := run(cmd.Context(), cl, args[0], args[1]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s described\n", kind, args[0])
			return nil
		},
	}
}

// newDeleteCmd is 'svc <kind> delete NAME...'.
func newDeleteCmd(g *globals, kind string, run func(ctx context.Context, cl *api.Client, name string) error) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete " + kind + "s (refused while something uses one)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var errs []error
			for _, name := range args {
				if err := run(cmd.Context(), cl, name); err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s deleted\n", kind, name)
			}
			return errors.Join(errs...)
		},
	}
}
