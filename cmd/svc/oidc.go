package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

func newOIDCCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "oidc", Short: "The identity providers (OpenID Connect) people sign in with: svc login (admin)"}
	var req api.OIDCProviderRequest
	var secretStdin bool
	set := &cobra.Command{
		Use:   "set NAME --issuer URL --client-id ID [--client-secret-stdin] [--admin-group G...]",
		Short: "Add or replace a provider",
		Long: `Add or replace an OpenID Connect provider people sign in with (svc login,
and the web UI). Register svc at the provider first, as an application with
these redirect addresses (docs/oidc.md says how for Okta, Entra ID, Google
and Keycloak):

  http://127.0.0.1/callback              svc login (any port; or one --port)
  https://<peer address>/ui/callback      the web UI, for each address people use

The peers fetch the provider's discovery document and keys, and redeem
sign-ins, themselves: its address must be public or in the agents'
--registry-allow list. The client secret is kept sealed and never shown.`,
		Example: "  echo \"$SECRET\" | svc cluster oidc set corp --issuer https://corp.okta.com --client-id 0oa1b2c3 \\\n" +
			"      --client-secret-stdin --admin-group svc-admins --allowed-group engineering",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if secretStdin {
				s, err := bufio.NewReader(io.LimitReader(cmd.InOrStdin(), api.MaxOIDCSecret+2)).ReadString('\n')
				if err != nil && !errors.Is(err, io.EOF) {
					return fmt.Errorf("read the client secret: %w", err)
				}
				req.ClientSecret = strings.TrimRight(s, "\r\n")
				if req.ClientSecret == "" {
					return usageErrorf("--client-secret-stdin: standard input holds no secret")
				}
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			p, err := cl.SetOIDCProvider(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			return printOIDCProviders(cmd, g, []api.OIDCProvider{p})
		},
	}
	f := set.Flags()
	f.StringVar(&req.Issuer, "issuer", "", "the provider's issuer URL (https://...)")
	f.StringVar(&req.ClientID, "client-id", "", "the client id the provider gave svc")
	f.BoolVar(&secretStdin, "client-secret-stdin", false, "read the client secret from standard input (providers that give one)")
	f.StringSliceVar(&req.Scopes, "scopes", nil, "scopes to ask for (default openid,email,profile; add groups where the provider has that scope: docs/oidc.md)")
	f.StringVar(&req.UsernameClaim, "username-claim", "", "the ID token claim that names the user (default email)")
	f.StringVar(&req.GroupsClaim, "groups-claim", "", "the ID token claim that lists the user's groups (default groups)")
	f.StringArrayVar(&req.AdminGroups, "admin-group", nil, "members of this group are admins (repeat for more)")
	f.StringArrayVar(&req.AllowedGroups, "allowed-group", nil, "members of this group may sign in (repeat for more)")
	f.StringArrayVar(&req.AllowedDomains, "allowed-domain", nil, "people of this Google Workspace domain may sign in (the ID token's hd claim, never an address's domain)")
	f.StringArrayVar(&req.AllowedUsers, "allowed-user", nil, "this username may sign in (repeat for more)")
	f.BoolVar(&req.AllowAnyone, "allow-anyone", false, "every account the provider knows may sign in (for Google: every Google account); without it or an --allowed-* flag only --admin-group members may")
	_ = set.MarkFlagRequired("issuer")
	_ = set.MarkFlagRequired("client-id")
	list := &cobra.Command{
		Use: "list", Short: "List the providers (never their secrets)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.clientFor()
			if err != nil {
				return err
			}
			ps, err := cl.ListOIDCProviders(cmd.Context())
			if err != nil {
				return err
			}
			return printOIDCProviders(cmd, g, ps)
		},
	}
	addOutputFlag(list, g, "table")
	remove := &cobra.Command{
		Use: "remove NAME", Short: "Remove a provider (people signed in keep their token until it expires)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := cl.RemoveOIDCProvider(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "provider %s removed\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(set, list, remove)
	return cmd
}

func printOIDCProviders(cmd *cobra.Command, g *globals, ps []api.OIDCProvider) error {
	out := g.output
	if out == "" {
		out = "table"
	}
	return printOut(cmd.OutOrStdout(), out, api.List[api.OIDCProvider]{Items: ps}, func(w io.Writer) error {
		rows := make([][]string, 0, len(ps))
		for _, p := range ps {
			secret := "no"
			if p.ClientSecretSet {
				secret = "sealed"
			}
			allowed := orNone(p.AllowedGroups)
			if p.AllowAnyone {
				allowed = "anyone"
			}
			rows = append(rows, []string{p.Name, p.Issuer, p.ClientID, secret, p.UsernameClaim, p.GroupsClaim,
				orNone(p.AdminGroups), allowed, orNone(p.AllowedDomains), orNone(p.AllowedUsers)})
		}
		return printTable(w, []string{"NAME", "ISSUER", "CLIENT ID", "SECRET", "USER CLAIM", "GROUPS CLAIM", "ADMIN GROUPS", "ALLOWED GROUPS", "ALLOWED DOMAINS", "ALLOWED USERS"}, rows)
	})
}

func orNone(v []string) string {
	if len(v) == 0 {
		return "-"
	}
	return strings.Join(v, ",")
}
