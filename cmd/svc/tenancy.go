package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

func newNamespaceCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "namespace", Aliases: []string{"ns"}, Short: "Manage namespaces (admin)"}
	cmd.AddCommand(newNamespaceQuotaCmd(g), newNamespaceSharedStorageCmd(g))
	cmd.AddCommand(&cobra.Command{
		Use: "create NAME", Short: "Create a namespace", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if _, err := cl.CreateNamespace(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "namespace %s created\n", args[0])
			return nil
		},
	}, &cobra.Command{
		Use: "list", Short: "List namespaces", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			nss, err := cl.ListNamespaces(cmd.Context())
			if err != nil {
				return err
			}
			rows := make([][]string, 0, len(nss))
			for _, n := range nss {
				created := "-"
				if n.CreatedAt != nil {
					created = n.CreatedAt.Format(time.RFC3339)
				}
				aliases := "-"
				if len(n.Aliases) > 0 {
					aliases = strings.Join(n.Aliases, ",")
				}
				rows = append(rows, []string{n.Name, created, aliases})
			}
			return printTable(cmd.OutOrStdout(), []string{"NAME", "CREATED", "ALIASES"}, rows)
		},
	}, newGetCmd(g, "Show a namespace", func(ctx context.Context, cl *api.Client, name string) (any, error) {
		return cl.GetNamespace(ctx, name)
	}), &cobra.Command{
		Use: "delete NAME", Short: "Delete a namespace that has no VMs or nodes", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := cl.DeleteNamespace(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "namespace %s deleted\n", args[0])
			return nil
		},
	})
	return cmd
}

func newRoleBindingCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "rb", Short: "Bind users, service accounts and directory groups to namespaces (admin)"}
	var users, sas, groups []string
	change := func(use, short string, add bool) *cobra.Command {
		c := &cobra.Command{
			Use: use + " NAMESPACE [--user NAME...] [--sa NS:NAME...] [--group GROUP...]", Short: short, Args: cobra.ExactArgs(1),
			Example: "  svc rb add-subject team-a --user alice@example.com --sa ci:builder\n" +
				"  svc rb add-subject team-a --group team-a-devs   # everyone who signs in (svc login) with that group",
			RunE: func(cmd *cobra.Command, args []string) error {
				cl, err := g.client()
				if err != nil {
					return err
				}
				call := cl.RemoveSubjects
				if add {
					call = cl.AddSubjects
				}
				got, err := call(cmd.Context(), args[0], api.Subjects{Users: users, ServiceAccounts: sas, Groups: groups})
				if err != nil {
					return err
				}
				return printSubjects(cmd, args[0], got)
			},
		}
		c.Flags().StringSliceVar(&users, "user", nil, "users")
		c.Flags().StringSliceVar(&sas, "sa", nil, "service accounts, as namespace:name")
		c.Flags().StringArrayVar(&groups, "group", nil, "directory groups, as the identity provider names them (repeat the flag for more)")
		return c
	}
	cmd.AddCommand(change("add-subject", "Bind subjects to a namespace", true), change("remove-subject", "Unbind subjects from a namespace", false),
		&cobra.Command{
			Use: "list-subjects NAMESPACE", Short: "List the subjects bound to a namespace", Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				cl, err := g.client()
				if err != nil {
					return err
				}
				got, err := cl.ListSubjects(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return printSubjects(cmd, args[0], got)
			},
		})
	return cmd
}

func printSubjects(cmd *cobra.Command, ns string, s api.Subjects) error {
	rows := [][]string{}
	for _, u := range s.Users {
		rows = append(rows, []string{"user", u})
	}
	for _, sa := range s.ServiceAccounts {
		rows = append(rows, []string{"serviceaccount", sa})
	}
	for _, g := range s.Groups {
		rows = append(rows, []string{"group", g})
	}
	fmt.Fprintf(cmd.OutOrStdout(), "namespace %s:\n", ns)
	return printTable(cmd.OutOrStdout(), []string{"KIND", "NAME"}, rows)
}

func newServiceAccountCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "sa", Aliases: []string{"serviceaccount"}, Short: "Manage service accounts, for CI/CD (admin)"}
	var duration string
	var never bool
	token := &cobra.Command{
		Use: "token NAME [--duration 720h | --no-expiration]", Short: "Print a token for a service account (default: valid 8760h)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			out, err := cl.ServiceAccountToken(cmd.Context(), g.namespace, args[0], api.TokenRequest{Duration: duration, NoExpiration: never})
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), out.Token)
			if out.ExpiresAt != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "expires", out.ExpiresAt.Format(time.RFC3339))
			}
			return nil
		},
	}
	token.Flags().StringVar(&duration, "duration", "", "how long the token is valid, e.g. 720h")
	token.Flags().BoolVar(&never, "no-expiration", false, "a token that never expires")
	cmd.AddCommand(&cobra.Command{
		Use: "create NAME", Short: "Create a service account in the namespace", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if _, err := cl.CreateServiceAccount(cmd.Context(), g.namespace, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "service account %s:%s created\n", g.namespace, args[0])
			return nil
		},
	}, &cobra.Command{
		Use: "list", Short: "List the namespace's service accounts", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			sas, err := cl.ListServiceAccounts(cmd.Context(), g.namespace)
			if err != nil {
				return err
			}
			rows := make([][]string, 0, len(sas))
			for _, sa := range sas {
				rows = append(rows, []string{sa.Name, sa.Namespace, sa.CreatedAt.Format(time.RFC3339)})
			}
			return printTable(cmd.OutOrStdout(), []string{"NAME", "NAMESPACE", "CREATED"}, rows)
		},
	}, &cobra.Command{
		Use: "delete NAME", Short: "Delete a service account; its tokens stop working", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := cl.DeleteServiceAccount(cmd.Context(), g.namespace, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "service account %s:%s deleted\n", g.namespace, args[0])
			return nil
		},
	}, token)
	return cmd
}

func newNodeNamespaceCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "namespace NODE NAMESPACE",
		Short: "Dedicate a node to a namespace (admin); VMs of a namespace run only on its nodes",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			n, err := cl.SetNodeNamespace(cmd.Context(), g.namespace, args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "node %s is now in namespace %s\n", n.Name, strings.TrimSpace(n.Namespace))
			return nil
		},
	}
}
