package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/svc-project/svc/api"
)

// guestExit is the exit status of a program run in a guest: svc vm run
// exits with it (and says nothing more).
type guestExit struct{ code int }

func (e guestExit) Error() string { return "the guest's program exited " + strconv.Itoa(e.code) }

// newVMRunCmd is 'svc vm run VM -- CMD ARGS...'.
func newVMRunCmd(g *globals) *cobra.Command {
	var timeout int
	cmd := &cobra.Command{
		Use:   "run VM -- COMMAND [ARG...]",
		Short: "Run a command in the VM's guest through its agent (no SSH): its output as it comes, its exit status",
		Long: "Runs COMMAND in the VM's guest through QEMU's guest agent, streaming its stdout and stderr,\n" +
			"and exits with its exit status. Standard input, when it is not a terminal, is passed to it\n" +
			"(at most 1 MiB). Each output is cut after 64 MiB (said on stderr).",
		Example: "  svc vm run web-1 -- uname -a\n  echo hello | svc vm run web-1 -- cat",
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return usageErrorf("give the VM, then -- and the command: svc vm run VM -- COMMAND [ARG...]")
			}
			var stdin []byte
			if f, ok := cmd.InOrStdin().(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
				var err error
				stdin, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), api.MaxRunStdin+1))
				if err != nil {
					return fmt.Errorf("read stdin: %w", err)
				}
				if len(stdin) > api.MaxRunStdin {
					return usageErrorf("stdin is more than %d bytes", api.MaxRunStdin)
				}
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			req := api.RunRequest{Command: args[1:], Stdin: string(stdin)}
			if cmd.Flags().Changed("timeout") {
				req.TimeoutSeconds = &timeout
			}
			r, err := cl.RunVMStream(cmd.Context(), g.namespace, args[0], req, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			for _, cut := range []struct {
				name string
				yes  bool
			}{{"stdout", r.StdoutTruncated}, {"stderr", r.StderrTruncated}} {
				if cut.yes {
					fmt.Fprintf(cmd.ErrOrStderr(), "svc: the command's %s was cut after %d bytes\n", cut.name, api.MaxRunStreamOutput)
				}
			}
			if r.ExitCode != 0 {
				return guestExit{r.ExitCode}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&timeout, "timeout", 0, fmt.Sprintf("seconds the command may run before it is killed (default %d, at most %d)", api.DefaultRunTimeout, api.MaxRunTimeout))
	return cmd
}

// newVMPortForwardCmd is 'svc vm port-forward VM [LOCAL:]GUEST'.
func newVMPortForwardCmd(g *globals) *cobra.Command {
	var address string
	cmd := &cobra.Command{
		Use:   "port-forward VM [LOCAL:]GUEST",
		Short: "Reach a TCP port of the VM's guest on a local port, through the API (no route to its host needed)",
		Long: "Listens on loopback (or --address) and carries each connection to the guest's port GUEST\n" +
			"through the API, many at once, until Ctrl-C. LOCAL 0 or none picks a free port (printed).",
		Example: "  svc vm port-forward web-1 2222:22   # then: ssh -p 2222 admin@127.0.0.1",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			local, guest, err := parsePortPair(args[1])
			if err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			// Fail early on a VM that is not there, not running or cannot.
			first, err := cl.DialVMPort(cmd.Context(), g.namespace, args[0], guest)
			if err != nil {
				return err
			}
			first.Close()
			dial := func(ctx context.Context) (net.Conn, error) { return cl.DialVMPort(ctx, g.namespace, args[0], guest) }
			listen := net.JoinHostPort(address, strconv.Itoa(local))
			return serveLocal(cmd, listen, dial, fmt.Sprintf("port %d of %s is at %%s; Ctrl-C ends", guest, args[0]))
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1", "local address to listen on")
	return cmd
}

// parsePortPair reads [LOCAL:]GUEST.
func parsePortPair(s string) (local, guest int, err error) {
	l, gs, found := strings.Cut(s, ":")
	if !found {
		l, gs = "0", s
	}
	local, lerr := strconv.Atoi(l)
	guest, gerr := strconv.Atoi(gs)
	if lerr != nil || gerr != nil || local < 0 || local > 65535 || guest < 1 || guest > 65535 {
		return 0, 0, usageErrorf("%q is not [LOCAL:]GUEST ports, e.g. 2222:22 or 22", s)
	}
	return local, guest, nil
}

// newVMResizeCmd is 'svc vm resize VM SIZE'.
func newVMResizeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "resize VM SIZE",
		Short: "Grow the VM's disk to SIZE (e.g. 20G; live while it runs; never shrinks)",
		Long: "Grows the VM's disk; a running guest sees it grow at once. The guest's partition and file\n" +
			"system are the guest's to grow (e.g. growpart and resize2fs, or cloud-init at its next boot).",
		Example: "  svc vm resize web-1 40G",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := api.ParseSize(args[1]); err != nil {
				return usageError{err}
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			vm, err := cl.ResizeVM(cmd.Context(), g.namespace, args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "vm %s: disk %s\n", vm.Name, api.FormatSize(vm.DiskBytes))
			return nil
		},
	}
}

// guestExitCode returns the status a guest's program exited with, if err
// is one.
func guestExitCode(err error) (int, bool) {
	var ge guestExit
	if errors.As(err, &ge) {
		return ge.code, true
	}
	return 0, false
}
