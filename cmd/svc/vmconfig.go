package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

func newVMConfigCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "vmconfig", Short: "Manage VM configs, the templates VMs are deployed from"}
	var o vmOptionFlags
	var image string
	var warm bool
	var hot int
	create := &cobra.Command{
		Use:   "create NAME --image IMAGE",
		Short: "Create a VM config",
		Long: `Create a VM config. With --warm, every node that holds the image keeps a
booted template of the config's shape (image, CPU, memory, devices), built in
the background: the config's VMs placed there start from it in about a second
instead of booting ("svc vmconfig get" lists the nodes under WARM NODES).
With --hot N as well, each of those nodes also keeps N guests of the shape
restored and running (each with its own machine id and SSH host keys, reachable
by no one): a deploy placed there claims one and its VM answers SSH about half
a second after the call ("svc vmconfig get" shows each node's ready guests
under HOT).`,
		Example: "  svc vmconfig create small --image mini-linux --cpu 1 --memory 1\n  svc vmconfig create ci --image mini-linux --cpu 1 --memory 1 --warm\n" +
			"  svc vmconfig create ci --image mini-linux --cpu 1 --memory 1 --warm --hot 2",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.VMConfig{
				Name: args[0], Image: image, CPU: o.cpu, Memory: o.memory, Node: o.node, Tag: o.tag, TagRequired: o.tagRequired,
				Scheduler: o.scheduler, ISO: o.iso, GPUPassthrough: o.gpu, LegacyIO: o.legacyIO, NetBoost: o.netBoost, SharedStorage: o.sharedStorage,
				DisplayWidth: o.displayWidth, DisplayHeight: o.displayHeight, DisplayDPI: o.displayDPI, CustomMetadata: o.metadata, TTL: o.ttl,
				Warm: warm, Hot: hot,
			}
			if err := checkVMFields(req.Fields()); err != nil {
				return err
			}
			cl, err := g.clientFor()
			if err != nil {
				return err
			}
			c, err := cl.CreateVMConfig(cmd.Context(), g.namespace, req)
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, c, func(w io.Writer) error { return printVMConfigs(w, []api.VMConfig{c}) })
		},
	}
	create.Flags().StringVar(&image, "image", "", "image the config's VMs are deployed from")
	create.Flags().BoolVar(&warm, "warm", false, "keep a booted template of the config on every node holding its image, so its VMs start without a boot")
	create.Flags().IntVar(&hot, "hot", 0, fmt.Sprintf("with --warm: guests of the config each of those nodes keeps restored and running for deploys to claim (0 to %d)", api.MaxHot))
	addOutputFlag(create, g, "table")
	o.bind(create.Flags())

	list := newListCmd(g, "List the VM configs of the namespace",
		func(ctx context.Context, cl *api.Client) ([]api.VMConfig, error) {
			return cl.ListVMConfigs(ctx, g.namespace)
		},
		printVMConfigs)

	get := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a VM config",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.clientFor()
			if err != nil {
				return err
			}
			c, err := cl.GetVMConfig(cmd.Context(), g.namespace, args[0])
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, c, func(w io.Writer) error { return printVMConfigs(w, []api.VMConfig{c}) })
		},
	}
	addOutputFlag(get, g, "table")
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a VM config",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := cl.DeleteVMConfig(cmd.Context(), g.namespace, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "vmconfig %s deleted\n", args[0])
			return nil
		},
	}
	var off bool
	var setHot int
	warmCmd := &cobra.Command{
		Use:     "warm NAME",
		Short:   "Turn a VM config's booted templates on (or off with --off), and set its hot pool (--hot)",
		Example: "  svc vmconfig warm ci\n  svc vmconfig warm ci --hot 2\n  svc vmconfig warm ci --off",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			warmOn := !off
			change := api.VMConfigChange{Warm: &warmOn}
			if cmd.Flags().Changed("hot") {
				change.Hot = &setHot
			}
			c, err := cl.ChangeVMConfig(cmd.Context(), g.namespace, args[0], change)
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, c, func(w io.Writer) error { return printVMConfigs(w, []api.VMConfig{c}) })
		},
	}
	warmCmd.Flags().BoolVar(&off, "off", false, "turn the templates off (every node removes them, and its hot guests)")
	warmCmd.Flags().IntVar(&setHot, "hot", 0, fmt.Sprintf("guests of the config each node holding its template keeps restored and running for deploys to claim (0 to %d)", api.MaxHot))
	addOutputFlag(warmCmd, g, "table")
	cmd.AddCommand(create, list, get, del, warmCmd)
	return cmd
}

func printVMConfigs(w io.Writer, cs []api.VMConfig) error {
	rows := make([][]string, 0, len(cs))
	for _, c := range cs {
		mem := "default"
		if c.Memory > 0 {
			mem = strconv.FormatFloat(c.Memory, 'f', -1, 64) + "Gi"
		}
		cpu := "default"
		if c.CPU > 0 {
			cpu = strconv.Itoa(c.CPU)
		}
		warm := "-"
		if c.Warm {
			warm = "none yet"
			if len(c.WarmNodes) > 0 {
				warm = strings.Join(c.WarmNodes, ",")
			}
		}
		hot := "-"
		if c.Hot > 0 {
			var parts []string
			for _, n := range slices.Sorted(maps.Keys(c.HotNodes)) {
				parts = append(parts, fmt.Sprintf("%s %d/%d", n, c.HotNodes[n], c.Hot))
			}
			hot = first(strings.Join(parts, ","), fmt.Sprintf("none yet (of %d)", c.Hot))
		}
		rows = append(rows, []string{c.Name, c.Image, cpu, mem, first(c.Node, "-"), first(c.Tag, "-"), warm, hot})
	}
	return printTable(w, []string{"NAME", "IMAGE", "CPU", "MEMORY", "NODE", "TAG", "WARM NODES", "HOT"}, rows)
}
