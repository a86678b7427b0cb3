package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

// The cluster's fabric: join tokens, the gossip key, the CA, node removal.

// newJoinTokenCmd is 'svc cluster join-token create|list|revoke' (admin).
func newJoinTokenCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "join-token", Short: "Tokens that admit new hosts to the cluster (admin)"}
	var ttl time.Duration
	var uses int
	var autoApprove bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Make a join token: print it, for 'svc agent --join ADDR --join-token TOKEN' on the new hosts",
		Long: `Make a join token. It names the cluster's CA (a new host checks the peer it
contacts against it before it sends anything) and carries a secret the
cluster keeps only as a hash. It admits --uses hosts until --ttl passes or an
admin revokes it. The token is printed once: it cannot be read again.

A host it admits is pending until an admin runs 'svc node approve NODE': it
replicates the cluster's state as a non-voter but holds no cluster secret (so
it can sign no token and open no sealed secret), answers no API call and takes
no VMs. With --auto-approve the hosts are approved at once (automation that
guards the token as it would the cluster's keys).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			t, err := cl.CreateJoinToken(cmd.Context(), api.JoinTokenRequest{TTL: ttl.String(), Uses: uses, AutoApprove: autoApprove})
			if err != nil {
				return err
			}
			if g.output != "table" {
				return printOut(cmd.OutOrStdout(), g.output, t, nil)
			}
			fmt.Fprintln(cmd.OutOrStdout(), t.Token)
			fmt.Fprintf(cmd.ErrOrStderr(), "join token %s admits %d host(s) until %s:\n  svc agent --join <a peer's address>:7946 --join-token <the token above>\n",
				t.ID, t.Uses, t.ExpiresAt.Local().Format(time.RFC3339))
			if !t.AutoApprove {
				fmt.Fprintln(cmd.ErrOrStderr(), "each host waits pending until an admin runs: svc node approve <its name>")
			}
			return nil
		},
	}
	create.Flags().DurationVar(&ttl, "ttl", 24*time.Hour, "how long the token admits hosts (at most 720h)")
	create.Flags().IntVar(&uses, "uses", 1, "how many hosts it admits")
	create.Flags().BoolVar(&autoApprove, "auto-approve", false, "approve the hosts it admits at once, without 'svc node approve' (for automation)")
	addOutputFlag(create, g, "table")
	list := &cobra.Command{
		Use:   "list",
		Short: "List join tokens: ids, state, uses and expiry (never a secret)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			ts, err := cl.ListJoinTokens(cmd.Context())
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, api.List[api.JoinToken]{Items: ts}, func(w io.Writer) error {
				rows := make([][]string, 0, len(ts))
				for _, t := range ts {
					usedBy := strings.Join(t.UsedBy, ",")
					if usedBy == "" {
						usedBy = "-"
					}
					rows = append(rows, []string{t.ID, t.State, strconv.Itoa(t.Used) + "/" + strconv.Itoa(t.Uses), t.ExpiresAt.Local().Format(time.RFC3339), t.CreatedBy, usedBy, strconv.FormatBool(t.AutoApprove)})
				}
				return printTable(w, []string{"ID", "STATE", "USED", "EXPIRES", "BY", "ADMITTED", "AUTO-APPROVE"}, rows)
			})
		},
	}
	addOutputFlag(list, g, "table")
	revoke := &cobra.Command{
		Use:   "revoke ID...",
		Short: "Revoke join tokens: they admit no more hosts",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			for _, id := range args {
				if err := cl.RevokeJoinToken(cmd.Context(), id); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "join token %s revoked\n", id)
			}
			return nil
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// newRotateGossipKeyCmd is 'svc cluster rotate-gossip-key' (admin).
func newRotateGossipKeyCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rotate-gossip-key",
		Short: "Replace the key gossip is encrypted with, on every live peer, without a restart (admin)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			m, err := cl.RotateGossipKey(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), m.Message)
			return nil
		},
	}
}

// newCACmd is 'svc cluster ca': the cluster's CA certificate, PEM.
func newCACmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ca",
		Short: "Print the cluster's CA certificate (PEM): what peers' HTTPS certificates are signed by until one is uploaded",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			ca, err := cl.ClusterCA(cmd.Context())
			if err != nil {
				return err
			}
			if g.output != "table" {
				return printOut(cmd.OutOrStdout(), g.output, ca, nil)
			}
			fmt.Fprint(cmd.OutOrStdout(), ca.CACert)
			fmt.Fprintf(cmd.ErrOrStderr(), "SHA-256 fingerprint: %s\n", ca.Fingerprint)
			return nil
		},
	}
	addOutputFlag(cmd, g, "table")
	return cmd
}

// newNodeApproveCmd is 'svc node approve NODE' (admin).
func newNodeApproveCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "approve NODE",
		Short: "Approve a node whose peer joined pending: it may then hold the cluster secret, vote and take VMs (admin)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			m, err := cl.ApproveNode(cmd.Context(), g.namespace, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), m.Message)
			return nil
		},
	}
}

// newNodeRemoveCmd is 'svc node remove NODE' (admin).
func newNodeRemoveCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NODE",
		Short: "Remove a node from the cluster for good: its peer can never connect again, whatever its data dir holds (admin; refused while VMs are on it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := cl.RemoveNode(cmd.Context(), g.namespace, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "node %s removed; the gossip key is being replaced\n", args[0])
			return nil
		},
	}
}
