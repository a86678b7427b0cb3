package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/svc-project/svc/api"
)

// vmOptionFlags are the deploy and vmconfig settings shared by both commands.
type vmOptionFlags struct {
	cpu                                     int
	memory                                  float64
	node, tag, scheduler, iso, ttl          string
	tagRequired, gpu, legacyIO, netBoost    bool
	sharedStorage                           bool
	displayWidth, displayHeight, displayDPI int
	metadata                                map[string]string
}

func (o *vmOptionFlags) bind(f *pflag.FlagSet) {
	f.IntVar(&o.cpu, "cpu", 0, "CPUs (default 3, or the vmconfig's)")
	f.Float64Var(&o.memory, "memory", 0, "memory in GiB, e.g. 4 or 2.5 (default 2, or the vmconfig's)")
	f.StringVar(&o.node, "node", "", "run on this node")
	f.StringVar(&o.tag, "tag", "", "prefer nodes with this tag")
	f.BoolVar(&o.tagRequired, "tag-required", false, "only nodes with --tag")
	f.StringVar(&o.scheduler, "scheduler", "", "default (spread load) or most-allocated (pack)")
	f.StringVar(&o.iso, "iso", "", "attach this ISO as a CD-ROM")
	f.BoolVar(&o.gpu, "gpu-passthrough", false, "pass a GPU through")
	f.BoolVar(&o.legacyIO, "legacy-io", false, "emulated disk and NIC instead of virtio")
	f.BoolVar(&o.sharedStorage, "shared-storage", false, "the namespace's shared folder of the node (mini-linux mounts it at /shared; the namespace must have shared storage on)")
	f.BoolVar(&o.netBoost, "net-boost", false, "network boost")
	f.IntVar(&o.displayWidth, "display-width", 0, "display width")
	f.IntVar(&o.displayHeight, "display-height", 0, "display height")
	f.IntVar(&o.displayDPI, "display-dpi", 0, "display DPI")
	f.StringToStringVar(&o.metadata, "metadata", nil, "custom metadata, key=value,...")
	f.StringVar(&o.ttl, "ttl", "", "time-to-live, e.g. 2h or 30m: the VM is deleted that long after its deploy")
}

func newVMCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "vm", Short: "Deploy, list and run VMs"}
	cmd.AddCommand(newVMConsoleCmd(g), newVMDeployCmd(g), newVMListCmd(g), newVMGetCmd(g), newVMDeleteCmd(g), newVMCommitCmd(g), newVMSaveCmd(g),
		newVMRunCmd(g), newVMPortForwardCmd(g), newVMResizeCmd(g), newVMExtendCmd(g),
		newPushCmd(g, "vm", func(ctx context.Context, cl *api.Client, name, ref string) (api.JobName, error) {
			return cl.PushVM(ctx, g.namespace, name, ref)
		}))
	for _, a := range []struct{ action, short string }{
		{"start", "Start a stopped VM"},
		{"stop", "Shut a VM down (ACPI, then forced after a grace period)"},
		{"suspend", "Pause a running VM"},
		{"resume", "Continue a suspended VM"},
		{"revert", "Throw away all changes since deploy and restart the VM"},
	} {
		cmd.AddCommand(newVMActionCmd(g, a.action, a.short))
	}
	return cmd
}

func newVMDeployCmd(g *globals) *cobra.Command {
	var (
		o             vmOptionFlags
		req           api.DeployRequest
		timeout       float64
		reservedPorts string
	)
	cmd := &cobra.Command{
		Use:   "deploy",
		Short: "Deploy a VM from an image or a VM config; returns once it runs",
		Example: `  svc vm deploy --image mini-linux
  svc vm deploy --vmconfig small --name web-1 --cpu 2
  svc vm deploy --image mini-linux --reserved-ports 8080:80 --metadata team=ci`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			if req.Image == "" && req.VMConfig == "" {
				return fmt.Errorf("pass --image or --vmconfig")
			}
			req.CPU, req.Memory, req.Timeout = ifChanged(f, "cpu", &o.cpu), ifChanged(f, "memory", &o.memory), ifChanged(f, "timeout", &timeout)
			req.TagRequired, req.GPUPassthrough = ifChanged(f, "tag-required", &o.tagRequired), ifChanged(f, "gpu-passthrough", &o.gpu)
			req.LegacyIO, req.NetBoost = ifChanged(f, "legacy-io", &o.legacyIO), ifChanged(f, "net-boost", &o.netBoost)
			req.SharedStorage = ifChanged(f, "shared-storage", &o.sharedStorage)
			req.DisplayWidth, req.DisplayHeight = ifChanged(f, "display-width", &o.displayWidth), ifChanged(f, "display-height", &o.displayHeight)
			req.DisplayDPI = ifChanged(f, "display-dpi", &o.displayDPI)
			req.Node, req.Tag, req.Scheduler, req.ISO, req.ReservedPorts, req.TTL = o.node, o.tag, o.scheduler, o.iso, reservedPorts, o.ttl
			if req.TTL != "" {
				if _, err := api.ParseTTL(req.TTL); err != nil {
					return usageError{fmt.Errorf("--ttl: %w", err)}
				}
			}
			if len(o.metadata) > 0 {
				req.CustomMetadata = o.metadata
			}
			if err := checkVMFields(req.Fields()); err != nil {
				return err
			}
			cl, err := g.clientFor()
			if err != nil {
				return err
			}
			vm, err := cl.DeployVM(cmd.Context(), g.namespace, req)
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, vm, func(w io.Writer) error { return printVM(w, vm) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Image, "image", "", "image to deploy from: a name in the namespace, or a registry reference <registry>/<path>:<tag>")
	f.StringVar(&req.VMConfig, "vmconfig", "", "VM config to deploy from (other flags override it)")
	f.StringVar(&req.Name, "name", "", "VM name (default: vm- and 5 random characters)")
	f.BoolVar(&req.ShouldGenerateName, "generate-name", false, "add - and 5 random characters to --name")
	f.StringVar(&reservedPorts, "reserved-ports", "", "node:guest port forwards, e.g. 8080:80,2222:22")
	f.Float64Var(&timeout, "timeout", api.DefaultTimeoutMinutes, "minutes to wait for the VM to run")
	addOutputFlag(cmd, g, "table")
	o.bind(f)
	return cmd
}

// ifChanged returns v when the flag was given, nil otherwise: a deploy sends
// only what the user set, so a VM config's values stay in force.
func ifChanged[T any](f *pflag.FlagSet, name string, v *T) *T {
	if f.Changed(name) {
		return v
	}
	return nil
}

// guestAgentDue says a VM's guest agent has not answered yet since the VM
// started, which is no sign that the image has none: its identity step still
// waits for it (pending, or none only for want of an answer so far).
func guestAgentDue(vm api.VM) bool {
	id := vm.Identity
	switch {
	case id == nil, id.State == api.IdentityPending:
		return true
	case id.State == api.IdentityNone:
		return strings.HasPrefix(id.Message, api.IdentityNoAgentYet)
	}
	return false
}

// printVM prints a VM and how to connect to it.
func printVM(w io.Writer, vm api.VM) error {
	if err := printVMs(w, []api.VM{vm}); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nssh:          ssh admin@%s -p %d\n", vm.IP, vm.SSH)
	fmt.Fprintf(w, "vnc:          %s:%d   (vnc://%s:%d)   password: %s\n", vm.IP, vm.VNC, vm.IP, vm.VNC, vm.VNCPassword)
	fmt.Fprintf(w, "screen share: vnc://%s:%d\n", vm.IP, vm.Screenshare)
	if vm.ExpiresAt != nil {
		fmt.Fprintf(w, "expires:      %s (in %s; svc vm extend adds time)\n", vm.ExpiresAt.Local().Format(time.RFC3339), time.Until(*vm.ExpiresAt).Round(time.Second))
	}
	if vm.DiskBytes > 0 {
		fmt.Fprintf(w, "disk:         %s\n", api.FormatSize(vm.DiskBytes))
	}
	switch {
	case vm.GuestAgent:
		fmt.Fprintf(w, "guest:        %s, %s (from its agent; svc vm run works)\n", first(vm.GuestOS, "-"), strings.Join(vm.GuestIPs, " "))
	case vm.Status != api.StatusRunning:
		fmt.Fprintf(w, "guest:        %s\n", strings.ToLower(first(vm.Status, "not running")))
	case guestAgentDue(vm):
		fmt.Fprintln(w, "guest:        booting: its agent has not answered yet (svc vm run waits for it)")
	default:
		fmt.Fprintln(w, "guest:        no agent answers (svc vm run needs QEMU's guest agent in the image)")
	}
	switch vm.StartedFrom {
	case "template":
		fmt.Fprintln(w, "started:      from a booted template (no boot)")
	case "boot":
		fmt.Fprintln(w, "started:      by booting")
	}
	if id := vm.Identity; id != nil {
		switch id.State {
		case api.IdentitySet:
			fmt.Fprintln(w, "identity:     its own (the image's identity step ran)")
		case api.IdentityPending:
			fmt.Fprintln(w, "identity:     pending (the identity step waits for the guest's agent)")
		default:
			fmt.Fprintf(w, "identity:     %s: %s\n", id.State, id.Message)
		}
	}
	for _, warn := range vm.PortWarnings {
		fmt.Fprintln(w, "warning:", warn)
	}
	if vm.ErrorMessage != "" {
		fmt.Fprintln(w, "note:", vm.ErrorMessage)
	}
	return nil
}

func printVMs(w io.Writer, vms []api.VM) error {
	rows := make([][]string, 0, len(vms))
	for _, vm := range vms {
		rows = append(rows, []string{vm.Name, vm.Status, vm.Node, vm.IP, strconv.Itoa(vm.SSH), strconv.Itoa(vm.VNC),
			strconv.Itoa(vm.CPU), vm.Memory, vm.Image, vm.DeployDate.Format("2006-01-02 15:04")})
	}
	return printTable(w, []string{"NAME", "STATUS", "NODE", "IP", "SSH", "VNC", "CPU", "MEMORY", "IMAGE", "DEPLOYED"}, rows)
}

func newVMListCmd(g *globals) *cobra.Command {
	cmd := newListCmd(g, "List the VMs of the namespace (all users'); --watch follows their changes",
		func(ctx context.Context, cl *api.Client) ([]api.VM, error) { return cl.ListVMs(ctx, g.namespace) },
		printVMs)
	var watch bool
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after the list, print each change as it happens (until Ctrl-C)")
	list := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if !watch {
			return list(cmd, args)
		}
		cl, err := g.clientFor()
		if err != nil {
			return err
		}
		return watchVMs(cmd.Context(), cl, g.namespace, g.output, cmd.OutOrStdout())
	}
	return cmd
}

func newVMGetCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a VM and how to connect to it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.clientFor()
			if err != nil {
				return err
			}
			vm, err := cl.GetVM(cmd.Context(), g.namespace, args[0])
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, vm, func(w io.Writer) error { return printVM(w, vm) })
		},
	}
	addOutputFlag(cmd, g, "table")
	return cmd
}

func newVMDeleteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete VMs (their disks and ports are freed)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			for _, name := range args {
				if err := cl.DeleteVM(cmd.Context(), g.namespace, name); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "vm %s deleted\n", name)
			}
			return nil
		},
	}
}

func newVMActionCmd(g *globals, action, short string) *cobra.Command {
	return &cobra.Command{
		Use:   action + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			vm, err := cl.ExecVM(cmd.Context(), g.namespace, args[0], action)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "vm %s is %s\n", vm.Name, strings.ToLower(vm.Status))
			return nil
		},
	}
}

// vmFieldFlag names the flag of a field api.VMFields checks.
func vmFieldFlag(field string) string {
	switch field {
	case "displayWidth":
		return "--display-width"
	case "displayHeight":
		return "--display-height"
	case "displayDpi":
		return "--display-dpi"
	case "customMetadata":
		return "--metadata"
	}
	return "--" + field // cpu, memory, scheduler, tag, timeout
}

// checkVMFields refuses, before anything is sent, a VM field the API would
// refuse (the same rule: api.VMFields), naming its flag.
func checkVMFields(f api.VMFields) error {
	var fe *api.FieldError
	if err := f.Validate(); errors.As(err, &fe) {
		return usageErrorf("%s: %s", vmFieldFlag(fe.Field), fe.Problem)
	}
	return nil
}
