package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

// imageWaitPoll is how often --wait looks at the image.
const imageWaitPoll = time.Second

// newVMCommitCmd is 'svc vm commit NAME': the VM's disk becomes its image.
func newVMCommitCmd(g *globals) *cobra.Command {
	var o imageOpFlags
	cmd := &cobra.Command{
		Use:   "commit NAME",
		Short: "Write a VM's disk into the image it was deployed from (the VM is stopped meanwhile)",
		Long: "Write a VM's disk into the image it was deployed from. The VM's host stops the VM, writes the\n" +
			"image and starts the VM again; the image is Updating meanwhile. VMs already running from the\n" +
			"image keep their disks; new deploys get the committed content.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var req api.CommitRequest
			if cmd.Flags().Changed("description") {
				req.Description = &o.description
			}
			st, err := cl.CommitVM(cmd.Context(), g.namespace, args[0], req)
			if err != nil {
				return err
			}
			return o.report(cmd.Context(), cmd.OutOrStdout(), cl, g.namespace, "commit of vm "+args[0], st)
		},
	}
	o.bind(cmd)
	return cmd
}

// newVMSaveCmd is 'svc vm save NAME IMAGE': the VM's disk as a new image.
func newVMSaveCmd(g *globals) *cobra.Command {
	var o imageOpFlags
	cmd := &cobra.Command{
		Use:   "save NAME IMAGE",
		Short: "Save a VM's disk as a new image (the VM is stopped meanwhile)",
		Long: "Save a VM's disk, flattened onto its base, as a new image. The VM's host stops the VM, writes\n" +
			"the image and starts the VM again; the new image is Updating meanwhile.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := api.ValidateImageName("IMAGE", args[1]); err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			req := api.SaveRequest{ImageName: args[1]}
			if cmd.Flags().Changed("description") {
				req.Description = &o.description
			}
			st, err := cl.SaveVM(cmd.Context(), g.namespace, args[0], req)
			if err != nil {
				return err
			}
			return o.report(cmd.Context(), cmd.OutOrStdout(), cl, g.namespace, "save of vm "+args[0], st)
		},
	}
	o.bind(cmd)
	return cmd
}

// imageOpFlags are the flags commit and save share.
type imageOpFlags struct {
	description string
	wait        time.Duration
}

func (o *imageOpFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.description, "description", "", "the image's description (default: unchanged, or empty for a new image)")
	cmd.Flags().DurationVar(&o.wait, "wait", 0, "wait up to this long for the image to be written, e.g. 10m (default: return at once)")
}

// report prints where to watch the operation, or with --wait polls the image
// until it is Ready or Failed.
func (o *imageOpFlags) report(ctx context.Context, w io.Writer, cl *api.Client, namespace, what string, st api.StatusURL) error {
	if o.wait <= 0 {
		fmt.Fprintf(w, "%s started; watch %s\n", what, st.StatusURL)
		return nil
	}
	name, err := imageNameOf(st.StatusURL)
	if err != nil {
		return err
	}
	img, err := waitImage(ctx, cl, namespace, name, o.wait)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	fmt.Fprintf(w, "%s done: image %s is %s (%s)\n", what, img.Name, img.Digest, img.SpaceUsed)
	return nil
}

// imageNameOf is the last element of an image's status URL.
func imageNameOf(statusURL string) (string, error) {
	i := strings.LastIndexByte(statusURL, '/')
	if i < 0 || i == len(statusURL)-1 {
		return "", fmt.Errorf("status URL %q names no image", statusURL)
	}
	return statusURL[i+1:], nil
}

// waitImage polls an image until it leaves Updating, for at most timeout.
func waitImage(ctx context.Context, cl *api.Client, namespace, name string, timeout time.Duration) (api.Image, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(imageWaitPoll)
	defer tick.Stop()
	for {
		img, err := cl.GetImage(ctx, namespace, name)
		switch {
		case err != nil && !errors.Is(err, context.DeadlineExceeded):
			return img, err
		case err == nil && img.State == api.ImageReady:
			return img, nil
		case err == nil && img.State == api.ImageFailed:
			return img, errors.New(img.ErrorMessage)
		}
		select {
		case <-ctx.Done():
			return img, fmt.Errorf("image %s still %s after %s: %w", name, img.State, timeout, ctx.Err())
		case <-tick.C:
		}
	}
}
