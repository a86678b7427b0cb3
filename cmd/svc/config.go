package main

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"
)

func newConfigCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Show or change the CLI's settings"}
	var apiURL string
	set := &cobra.Command{
		Use:     "set",
		Short:   "Set the API address the CLI talks to",
		Example: "  svc config set --api-url http://10.0.0.20:8080",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if apiURL == "" {
				return errors.New("nothing to set: pass --api-url URL")
			}
			u, err := url.Parse(apiURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("--api-url %q must be an http:// or https:// URL", apiURL)
			}
			c, p, err := loadConfig()
			if err != nil {
				return err
			}
			c.APIURL = apiURL
			if err := saveConfig(p, c); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "API address set to %s in %s\n", apiURL, p)
			return nil
		},
	}
	// Local flag of its own: the persistent --api-url is the per-call override.
	set.Flags().StringVar(&apiURL, "api-url", "", "API address, e.g. http://10.0.0.20:8080")
	show := &cobra.Command{
		Use:   "view",
		Short: "Show the settings in effect",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, p, err := loadConfig()
			if err != nil {
				return err
			}
			cl, err := g.client()
			addr := "(none)"
			if err == nil {
				addr = cl.BaseURL
			}
			tok := "(none)"
			if c.Token != "" {
				tok = "(set)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "config file: %s\napi url:     %s\ntoken:       %s\n", p, addr, tok)
			return nil
		},
	}
	cmd.AddCommand(set, show, newKubeconfigCmd(g))
	return cmd
}
