package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/spf13/cobra"
)

// newVMConsoleCmd is 'svc vm console VM [--listen ADDR]': a local VNC port
// that carries the VM's screen through the API, so that any VNC client
// shows it without the VM's VNC password or a route to its host.
func newVMConsoleCmd(g *globals) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:     "console VM",
		Short:   "Serve the VM's screen on a local VNC port, through the API (no VNC password needed)",
		Example: "  svc vm console web-1 --listen 127.0.0.1:5999   # then: vncviewer 127.0.0.1:5999",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			// Fail early on a VM that is not there or not running.
			first, err := cl.DialConsole(cmd.Context(), g.namespace, args[0])
			if err != nil {
				return err
			}
			first.Close()
			dial := func(ctx context.Context) (net.Conn, error) { return cl.DialConsole(ctx, g.namespace, args[0]) }
			return serveLocal(cmd, listen, dial, fmt.Sprintf("the screen of %s is at %%s (VNC, no password); Ctrl-C ends", args[0]))
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "local address of the VNC port (default: a free port on loopback, printed)")
	return cmd
}

// serveLocal listens on listen and carries each connection to one dial
// makes, until Ctrl-C; banner (with %s for the address) says where.
func serveLocal(cmd *cobra.Command, listen string, dial func(context.Context) (net.Conn, error), banner string) error {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Fprintln(cmd.OutOrStdout(), fmt.Sprintf(banner, l.Addr()))
	go func() { <-cmd.Context().Done(); l.Close() }()
	for {
		c, err := l.Accept()
		if err != nil {
			if cmd.Context().Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go bridge(cmd.Context(), c, dial, cmd.ErrOrStderr())
	}
}

// bridge carries one local connection to a remote one of its own.
func bridge(ctx context.Context, local net.Conn, dial func(context.Context) (net.Conn, error), log io.Writer) {
	defer local.Close()
	remote, err := dial(ctx)
	if err != nil {
		fmt.Fprintln(log, "Error:", err)
		return
	}
	defer remote.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(remote, local); done <- struct{}{} }()
	go func() { _, _ = io.Copy(local, remote); done <- struct{}{} }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
