package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

// schedulable says whether a node takes new VMs, for the node table.
func schedulable(n api.Node) string {
	if n.Pending {
		return "awaits approval"
	}
	if n.Schedulable {
		return "on"
	}
	return "cordoned"
}

// newNodeCordonCmd is 'svc node cordon NODE' (or uncordon).
func newNodeCordonCmd(g *globals, cordon bool) *cobra.Command {
	use, short := "cordon", "Take a node out of placement: it keeps its VMs and takes no new one (admin)"
	if !cordon {
		use, short = "uncordon", "Put a cordoned node back into placement (admin)"
	}
	return &cobra.Command{
		Use: use + " NODE", Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			call := cl.CordonNode
			if !cordon {
				call = cl.UncordonNode
			}
			n, err := call(cmd.Context(), g.namespace, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "node %s: %s\n", n.Name, map[bool]string{true: "takes new VMs", false: "cordoned (takes no new VMs)"}[n.Schedulable])
			return nil
		},
	}
}

// drainPoll is how often 'svc node drain --wait' looks at the node's VMs.
const drainPoll = 2 * time.Second

// newNodeDrainCmd is 'svc node drain NODE [--wait]': cordon it, then list
// the VMs on it (they cannot move while they run) and, with --wait, wait
// until they are all deleted.
func newNodeDrainCmd(g *globals) *cobra.Command {
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "drain NODE [--wait]",
		Short: "Cordon a node and list the VMs still on it, with who owns them; --wait returns once they are gone (admin)",
		Long: "Cordons NODE, so that it takes no new VM, and lists the VMs on it in every namespace with\n" +
			"their owners: running VMs cannot move, so their owners (or an admin) delete them, or they\n" +
			"expire. With --wait it returns once the node runs no VM (exit 1 after --timeout).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if _, err := cl.CordonNode(ctx, g.namespace, args[0]); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "node %s cordoned\n", args[0])
			deadline := time.Now().Add(timeout)
			shown := -1
			for {
				vms, err := vmsOnNode(ctx, cl, args[0])
				if err != nil {
					return err
				}
				if len(vms) == 0 {
					fmt.Fprintf(out, "node %s runs no VM: drained\n", args[0])
					return nil
				}
				if len(vms) != shown {
					if err := printDrain(out, args[0], vms); err != nil {
						return err
					}
					shown = len(vms)
				}
				if !wait {
					return nil
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("node %s still runs %d VMs after %s", args[0], len(vms), timeout)
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(drainPoll):
				}
			}
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the node runs no VM")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Hour, "with --wait, how long to wait")
	return cmd
}

// vmsOnNode lists the VMs on a node in every namespace.
func vmsOnNode(ctx context.Context, cl *api.Client, node string) ([]api.VM, error) {
	nss, err := cl.ListNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	var out []api.VM
	for _, ns := range nss {
		vms, err := cl.ListVMs(ctx, ns.Name)
		if err != nil {
			return nil, err
		}
		for _, vm := range vms {
			if vm.Node == node {
				out = append(out, vm)
			}
		}
	}
	return out, nil
}

func printDrain(w io.Writer, node string, vms []api.VM) error {
	fmt.Fprintf(w, "%d VMs still on %s (they cannot move while they run; delete them or let them expire):\n", len(vms), node)
	rows := make([][]string, 0, len(vms))
	for _, vm := range vms {
		expires := "-"
		if vm.ExpiresAt != nil {
			expires = vm.ExpiresAt.Local().Format(time.RFC3339)
		}
		rows = append(rows, []string{vm.Namespace, vm.Name, first(vm.Owner, "-"), vm.Status, expires})
	}
	return printTable(w, []string{"NAMESPACE", "NAME", "OWNER", "STATUS", "EXPIRES"}, rows)
}

// newVMExtendCmd is 'svc vm extend VM DURATION'.
func newVMExtendCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use: "extend VM DURATION", Short: "Move a VM's expiry later (e.g. 1h; a VM deployed with --ttl)", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := api.ParseTTL(args[1]); err != nil {
				return usageError{err}
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			vm, err := cl.ExtendVM(cmd.Context(), g.namespace, args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "vm %s expires %s\n", vm.Name, vm.ExpiresAt.Local().Format(time.RFC3339))
			return nil
		},
	}
}

// newNamespaceQuotaCmd is 'svc namespace quota NAMESPACE [--cpu N --memory G --vms N]'.
func newNamespaceQuotaCmd(g *globals) *cobra.Command {
	var q api.Quota
	cmd := &cobra.Command{
		Use:   "quota NAMESPACE [--cpu N] [--memory GIB] [--vms N] [--disk GIB]",
		Short: "Show a namespace's quota and use; with flags, set it (an absent flag: no bound; all 0: none) (admin)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var nq api.NamespaceQuota
			f := cmd.Flags()
			if f.Changed("cpu") || f.Changed("memory") || f.Changed("vms") || f.Changed("disk") {
				nq, err = cl.SetQuota(cmd.Context(), args[0], q)
			} else {
				nq, err = cl.GetQuota(cmd.Context(), args[0])
			}
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, nq, func(w io.Writer) error { return printQuota(w, nq) })
		},
	}
	cmd.Flags().IntVar(&q.CPU, "cpu", 0, "CPUs the namespace's VMs may take together (0: no bound)")
	cmd.Flags().Float64Var(&q.Memory, "memory", 0, "GiB of memory they may take (0: no bound)")
	cmd.Flags().IntVar(&q.VMs, "vms", 0, "how many VMs the namespace may have (0: no bound)")
	cmd.Flags().Float64Var(&q.Disk, "disk", 0, "GiB of disk their guests may see together, resizes included (0: no bound)")
	addOutputFlag(cmd, g, "table")
	return cmd
}

func printQuota(w io.Writer, nq api.NamespaceQuota) error {
	bound := func(v float64, isSet bool) string {
		if !isSet || v == 0 {
			return "-"
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	has := nq.Quota != nil
	q := api.Quota{}
	if has {
		q = *nq.Quota
	}
	rows := [][]string{
		{"cpu", strconv.Itoa(nq.Used.CPU), bound(float64(q.CPU), has)},
		{"memory (GiB)", strconv.FormatFloat(nq.Used.Memory, 'f', -1, 64), bound(q.Memory, has)},
		{"vms", strconv.Itoa(nq.Used.VMs), bound(float64(q.VMs), has)},
		{"disk (GiB)", strconv.FormatFloat(nq.Used.Disk, 'f', -1, 64), bound(q.Disk, has)},
	}
	if nq.PooledDisk > 0 {
		rows = append(rows, []string{"  of it pooled hot guests'", strconv.FormatFloat(nq.PooledDisk, 'f', -1, 64), "-"})
	}
	return printTable(w, []string{"RESOURCE", "USED", "QUOTA"}, rows)
}

// newAuditCmd is 'svc audit [--namespace NS] [--subject S] [--since 1h] [--limit N]'.
func newAuditCmd(g *globals) *cobra.Command {
	var f api.AuditFilter
	cmd := &cobra.Command{
		Use:     "audit",
		Short:   "Show the cluster's audit log: every API write, who, from where, the outcome (admin)",
		Long:    "Shows the audit log, oldest first: every namespace's writes and the cluster's, or with\n--namespace only that namespace's.",
		Example: "  svc audit --since 1h\n  svc audit --subject team-a:ci -n team-a",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("namespace") {
				f.Namespace = g.namespace
			}
			entries, err := cl.ListAudit(cmd.Context(), f)
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, api.List[api.AuditEntry]{Items: entries}, func(w io.Writer) error {
				rows := make([][]string, 0, len(entries))
				for _, e := range entries {
					rows = append(rows, []string{e.Time.Local().Format(time.RFC3339), first(e.Subject, "(no token)"), e.Method, e.Path,
						strconv.Itoa(e.Code) + " " + e.Reason, e.Peer, e.RemoteAddr})
				}
				return printTable(w, []string{"TIME", "SUBJECT", "METHOD", "PATH", "OUTCOME", "PEER", "FROM"}, rows)
			})
		},
	}
	cmd.Flags().StringVar(&f.Subject, "subject", "", "only this subject's writes (a user, or namespace:name of a service account)")
	cmd.Flags().StringVar(&f.Since, "since", "", "only writes since a time (RFC 3339) or a duration ago (1h)")
	cmd.Flags().IntVar(&f.Limit, "limit", 0, "at most this many, the newest (default 1000)")
	addOutputFlag(cmd, g, "table")
	return cmd
}

// watchVMs prints a namespace's VMs and then their changes, one line each
// (a JSON event per line with -o json), resuming after a dropped stream
// and listing again when the version is too old, until ctx ends.
func watchVMs(ctx context.Context, cl *api.Client, ns, output string, w io.Writer) error {
	if output == "table" || output == "" {
		fmt.Fprintf(w, "%-9s %-24s %-10s %-12s %s\n", "EVENT", "NAME", "STATUS", "NODE", "EXPIRES")
	}
	rv, backoff := "", 500*time.Millisecond
	for ctx.Err() == nil {
		err := cl.Watch(ctx, ns, "vms", rv, func(ev api.WatchEvent) error {
			rv = ev.ResourceVersion
			if ev.Type == "BOOKMARK" {
				return nil
			}
			if output == "json" {
				b, err := json.Marshal(ev)
				if err == nil {
					_, err = fmt.Fprintln(w, string(b))
				}
				return err
			}
			var vm api.VM
			if err := json.Unmarshal(ev.Object, &vm); err != nil {
				return err
			}
			expires := "-"
			if vm.ExpiresAt != nil {
				expires = vm.ExpiresAt.Local().Format(time.RFC3339)
			}
			_, err := fmt.Fprintf(w, "%-9s %-24s %-10s %-12s %s\n", ev.Type, vm.Name, vm.Status, vm.Node, expires)
			return err
		})
		switch code := api.CodeOf(err); {
		case ctx.Err() != nil:
			return nil // Ctrl-C
		case code == http.StatusGone:
			rv = "" // too far behind: list again
		case code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusNotFound:
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
	return nil
}
