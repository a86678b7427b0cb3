package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

func newClusterCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Show the cluster"}
	info := &cobra.Command{
		Use:   "info",
		Short: "Show the cluster's leader, peers and their Raft roles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.clientFor()
			if err != nil {
				return err
			}
			ci, err := cl.ClusterInfo(cmd.Context())
			if err != nil {
				return err
			}
			if g.output != "table" {
				return printOut(cmd.OutOrStdout(), g.output, ci, nil)
			}
			leader := ci.Leader
			if leader == "" {
				leader = "(none: the cluster has no quorum)"
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "cluster:  %s\nversion:  %s (command level %d)\nendpoint: %s\nleader:   %s\n", ci.ClusterID, ci.Version, max(ci.Level, 1), ci.APIEndpoint, leader)
			if ci.Halted != "" {
				fmt.Fprintf(w, "HALTED:   %s\n", ci.Halted)
			}
			fmt.Fprintln(w)
			rows := make([][]string, 0, len(ci.Peers))
			for _, p := range ci.Peers {
				ver, level := peerVersion(p)
				rows = append(rows, []string{p.Name, p.Raft, p.APIAddr, ver, level})
			}
			return printTable(w, []string{"PEER", "RAFT", "API", "VERSION", "LEVEL"}, rows)
		},
	}
	addOutputFlag(info, g, "table")
	openapi := newDocumentCmd(g, "openapi", "Print the API's OpenAPI 3 document (generate clients from it)", (*api.Client).OpenAPI)
	metrics := newDocumentCmd(g, "metrics", "Print the peer's Prometheus metrics", (*api.Client).Metrics)
	explorer := &cobra.Command{
		Use:   "explorer",
		Short: "Print the address of the API explorer (open it in a browser; Authorize takes \"Bearer <token>\")",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), cl.ExplorerURL())
			return nil
		},
	}
	cmd.AddCommand(info, openapi, metrics, explorer, newCertCmd(g), newJoinTokenCmd(g), newRotateGossipKeyCmd(g), newCACmd(g), newOIDCCmd(g), newSnapshotCmd(g))
	return cmd
}

// newDocumentCmd prints a document the API serves as is.
func newDocumentCmd(g *globals, use, short string, read func(*api.Client, context.Context) ([]byte, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			b, err := read(cl, cmd.Context())
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
}

// newCertCmd is 'svc cluster cert --cert FILE --key FILE' (admin).
func newCertCmd(g *globals) *cobra.Command {
	var certFile, keyFile string
	cmd := &cobra.Command{
		Use:   "cert --cert FILE --key FILE",
		Short: "Upload the PEM certificate and key every peer serves HTTPS with (admin; no restart)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			certPEM, err := os.ReadFile(certFile)
			if err != nil {
				return err
			}
			keyPEM, err := os.ReadFile(keyFile)
			if err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			m, err := cl.UploadCert(cmd.Context(), certPEM, keyPEM)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), m.Message)
			return nil
		},
	}
	cmd.Flags().StringVar(&certFile, "cert", "", "PEM certificate (chain) file")
	cmd.Flags().StringVar(&keyFile, "key", "", "PEM private key file")
	_ = cmd.MarkFlagRequired("cert")
	_ = cmd.MarkFlagRequired("key")
	return cmd
}
