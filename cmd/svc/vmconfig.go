package main

import (
	"context"
	"fmt"
	"io"
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
	create := &cobra.Command{
		Use:   "create NAME --image IMAGE",
		Short: "Create a VM config",
		Long: `Create a VM config. With --warm, every node that holds the image keeps a
booted template of the config's shape (image, CPU, memory, devices), built in
the background: the config's VMs placed there start from it in about a second
instead of booting ("svc vmconfig get" lists the nodes under WARM NODES).`,
		Example: "  svc vmconfig create small --image mini-linux --cpu 1 --memory 1\n  svc vmconfig create ci --image mini-linux --cpu 1 --memory 1 --warm",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.VMConfig{
				Name: args[0], Image: image, CPU: o.cpu, Memory: o.memory, Node: o.node, Tag: o.tag, TagRequired: o.tagRequired,
				Scheduler: o.scheduler, ISO: o.iso, GPUPassthrough: o.gpu, LegacyIO: o.legacyIO, NetBoost: o.netBoost, SharedStorage: o.sharedStorage,
				DisplayWidth: o.displayWidth, DisplayHeight: o.displayHeight, DisplayDPI: o.displayDPI, CustomMetadata: o.metadata, TTL: o.ttl,
				Warm: warm,
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
	warmCmd := &cobra.Command{
		Use:     "warm NAME",
		Short:   "Turn a VM config's booted templates on (or off with --off)",
		Example: "  svc vmconfig warm ci\n  svc vmconfig warm ci --off",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			c, err := cl.SetVMConfigWarm(cmd.Context(), g.namespace, args[0], !off)
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, c, func(w io.Writer) error { return printVMConfigs(w, []api.VMConfig{c}) })
		},
	}
	warmCmd.Flags().BoolVar(&off, "off", false, "turn the templates off (every node removes them)")
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
		rows = append(rows, []string{c.Name, c.Image, cpu, mem, first(c.Node, "-"), first(c.Tag, "-"), warm})
	}
	return printTable(w, []string{"NAME", "IMAGE", "CPU", "MEMORY", "NODE", "TAG", "WARM NODES"}, rows)
}
