package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/node/hostadmin"
)

// adminSocket talks to a peer's admin socket, which only root on its host can open.
func adminSocket(ctx context.Context, socket, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://admin"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin socket %s (run this as root on a peer's host; --data-dir or --socket if it is elsewhere): %w", socket, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var st api.Status
		if json.NewDecoder(resp.Body).Decode(&st) == nil && st.Message != "" {
			return errors.New(st.Message)
		}
		return errors.New(resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func newAdminCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Host-level administration through a peer's local admin socket (root on a cluster host)",
	}
	var dataDir, socket string
	sock := func() string {
		if socket != "" {
			return socket
		}
		return filepath.Join(dataDir, hostadmin.AdminSocket)
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&dataDir, "data-dir", "/var/lib/svc", "the peer's data dir (its admin socket is there)")
	pf.StringVar(&socket, "socket", "", "the admin socket (default: DATA_DIR/"+hostadmin.AdminSocket+")")

	var user, ttl string
	var admin bool
	token := &cobra.Command{
		Use:     "token --user NAME [--admin] [--ttl 1h]",
		Short:   "Print a personal token for a user (recording the user the first time)",
		Example: "  sudo svc admin token --user alice\n  sudo svc admin token --user ops --admin --ttl 8h",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := api.ValidateUserName("--user", user); err != nil {
				return err
			}
			var out api.TokenResponse
			if err := adminSocket(cmd.Context(), sock(), "/token", hostadmin.AdminTokenRequest{User: user, Admin: admin, TTL: ttl}, &out); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), out.Token)
			return nil
		},
	}
	token.Flags().StringVar(&user, "user", "", "user name")
	token.Flags().BoolVar(&admin, "admin", false, "give the user the admin role")
	token.Flags().StringVar(&ttl, "ttl", "1h", "how long the token is valid")

	userCmd := &cobra.Command{Use: "user", Short: "Manage users"}
	userCmd.AddCommand(&cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a user: its tokens stop working at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var out api.Message
			if err := adminSocket(cmd.Context(), sock(), "/users/remove", hostadmin.AdminUserRequest{User: args[0]}, &out); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), out.Message)
			return nil
		},
	})
	cmd.AddCommand(token, userCmd)
	return cmd
}

// expiredHint is what a person whose token expired is told to do.
const expiredHint = "Your token has expired: run 'svc login' to sign in again (or ask an admin for a new token)."

// tokenExpiry reads a token's expiry without checking it: the cluster
// checks; this only spares a person a call that cannot succeed.
func tokenExpiry(tok string) (time.Time, bool) {
	var c jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(tok, &c); err != nil || c.ExpiresAt == nil {
		return time.Time{}, false
	}
	return c.ExpiresAt.Time, true
}

func newUserCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "Your personal token in the CLI's config (svc login keeps it there); the cluster's users (admin)"}
	cmd.AddCommand(newListCmd(g, "List the cluster's users: who root on a host named, and people who signed in with their provider, issuer and subject (admin)",
		func(ctx context.Context, cl *api.Client) ([]api.User, error) { return cl.ListUsers(ctx) },
		func(w io.Writer, us []api.User) error {
			rows := make([][]string, 0, len(us))
			for _, u := range us {
				role, who := "user", "root on a host"
				if u.Admin {
					role = "admin"
				}
				if u.Provider != "" {
					who = u.Provider + " " + first(u.Subject, "(subject not kept yet)") + "@" + first(u.Issuer, "?")
				}
				rows = append(rows, []string{u.Name, role, who, orNone(u.Groups)})
			}
			return printTable(w, []string{"NAME", "ROLE", "WHO", "GROUPS"}, rows)
		}))
	cmd.AddCommand(&cobra.Command{
		Use:   "set-token TOKEN",
		Short: "Keep a token in the CLI's config (it is sent with every call)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, p, err := loadConfig()
			if err != nil {
				return err
			}
			c.Token = args[0]
			if err := saveConfig(p, c); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "token kept in %s\n", p)
			return nil
		},
	}, &cobra.Command{
		Use:   "get-token",
		Short: "Print the token the CLI uses ($SVC_TOKEN wins over the config)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := loadConfig()
			if err != nil {
				return err
			}
			tok := first(os.Getenv("SVC_TOKEN"), c.Token)
			if tok == "" {
				return errors.New("no token: run 'svc login' (where the cluster has an identity provider), or get one from an admin ('svc admin token --user NAME' on a cluster host) and run 'svc user set-token TOKEN'")
			}
			if exp, ok := tokenExpiry(tok); ok && time.Now().After(exp) {
				return fmt.Errorf("the token expired at %s. %s", exp.Local().Format(time.RFC3339), expiredHint)
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			return nil
		},
	})
	return cmd
}
