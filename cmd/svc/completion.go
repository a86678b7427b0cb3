package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

// completionTimeout bounds the API call behind a shell completion.
const completionTimeout = 5 * time.Second

// namesOf lists the names a completion offers, from the cluster.
type namesOf func(ctx context.Context, cl *api.Client, ns string) ([]string, error)

func names[T any](list func(*api.Client, context.Context, string) ([]T, error), name func(T) string) namesOf {
	return func(ctx context.Context, cl *api.Client, ns string) ([]string, error) {
		items, err := list(cl, ctx, ns)
		out := make([]string, 0, len(items))
		for _, it := range items {
			out = append(out, name(it))
		}
		return out, err
	}
}

// completionTables name, per command, what its NAME arguments are, and
// what the flags that take a name complete to.
func completionTables() (args, flags map[string]namesOf) {
	vmNames := names((*api.Client).ListVMs, func(v api.VM) string { return v.Name })
	imageNames := names((*api.Client).ListImages, func(v api.Image) string { return v.Name })
	isoNames := names((*api.Client).ListISOs, func(v api.ISO) string { return v.Name })
	configNames := names((*api.Client).ListVMConfigs, func(v api.VMConfig) string { return v.Name })
	jobNames := names((*api.Client).ListJobs, func(v api.Job) string { return v.Name })
	remoteNames := names((*api.Client).ListRemoteImages, func(v api.RemoteImage) string { return v.Name })
	saNames := names((*api.Client).ListServiceAccounts, func(v api.ServiceAccount) string { return v.Name })
	regcredNames := names((*api.Client).ListRegistryCredentials, func(v api.RegistryCredential) string { return v.Server })
	nodeNames := names(func(cl *api.Client, ctx context.Context, ns string) ([]api.Node, error) {
		return cl.ListNodes(ctx, ns, false)
	},
		func(v api.Node) string { return v.Name })
	namespaceNames := names(func(cl *api.Client, ctx context.Context, _ string) ([]api.Namespace, error) {
		return cl.ListNamespaces(ctx)
	},
		func(v api.Namespace) string { return v.Name })
	args = map[string]namesOf{
		"vm get": vmNames, "vm delete": vmNames, "vm start": vmNames, "vm stop": vmNames, "vm suspend": vmNames,
		"vm resume": vmNames, "vm revert": vmNames, "vm commit": vmNames, "vm console": vmNames, "vm save": vmNames, "vm push": vmNames,
		"image get": imageNames, "image delete": imageNames, "image copy": imageNames, "image describe": imageNames,
		"image download": imageNames, "image push": imageNames, "image pull": remoteNames, "remote pull": remoteNames,
		"iso get": isoNames, "iso delete": isoNames, "iso copy": isoNames, "iso describe": isoNames,
		"vmconfig get": configNames, "vmconfig delete": configNames,
		"node tag": nodeNames, "node untag": nodeNames, "node namespace": nodeNames,
		"job get": jobNames, "job watch": jobNames,
		"sa delete": saNames, "sa token": saNames, "regcred remove": regcredNames,
		"namespace get": namespaceNames, "namespace delete": namespaceNames,
	}
	flags = map[string]namesOf{
		"image": imageNames, "vmconfig": configNames, "node": nodeNames, "iso": isoNames, "namespace": namespaceNames,
	}
	return args, flags
}

// addCompletions gives the commands dynamic completion of the names they
// take, read from the cluster with the command line's own address, token
// and namespace.
func addCompletions(root *cobra.Command, g *globals) {
	complete := func(list namesOf) cobra.CompletionFunc {
		return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cl, err := g.client()
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
			defer cancel()
			all, _ := list(ctx, cl, g.namespace)
			var out []cobra.Completion
			for _, n := range all {
				if strings.HasPrefix(n, toComplete) && !slices.Contains(args, n) {
					out = append(out, n)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
	}
	argCompletions, flagCompletions := completionTables()
	_ = root.RegisterFlagCompletionFunc("namespace", complete(flagCompletions["namespace"]))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), "svc ")
		if list, ok := argCompletions[path]; ok && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = complete(list)
		}
		for flag, list := range flagCompletions {
			if flag != "namespace" && c.LocalNonPersistentFlags().Lookup(flag) != nil {
				_ = c.RegisterFlagCompletionFunc(flag, complete(list))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
