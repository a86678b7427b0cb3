package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"

	"github.com/svc-project/svc/api"
)

// kubeName names the cluster, user and context svc writes in a kubeconfig.
const kubeName = "svc"

// defaultKubeconfig is $KUBECONFIG's first file, or ~/.kube/config.
func defaultKubeconfig() (string, error) {
	if v := os.Getenv("KUBECONFIG"); v != "" {
		return filepath.SplitList(v)[0], nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home dir: %w", err)
	}
	return filepath.Join(home, ".kube", "config"), nil
}

// writeKubeconfig adds (or replaces) the svc cluster, user and context in
// the kubeconfig at path and makes the context current: kubectl,
// client-go and Orka's Packer plugin then reach the cluster's
// Kubernetes-style API with the client's token. An HTTPS address gets the
// cluster's CA. The file is read and written in the kubeconfig's own
// format (clientcmd's v1 types, YAML): what it holds besides svc's is kept.
// It returns the server address it wrote.
func writeKubeconfig(ctx context.Context, cl *api.Client, path string) (string, error) {
	if cl.Token == "" {
		return "", errors.New("no token to write: sign in (svc login) or set one (svc config set --token)")
	}
	cfg := clientcmdv1.Config{APIVersion: "v1", Kind: "Config"}
	switch b, err := os.ReadFile(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", fmt.Errorf("read kubeconfig %s: %w", path, err)
	default:
		if err := yaml.Unmarshal(b, &cfg); err != nil {
			return "", fmt.Errorf("read kubeconfig %s: %w", path, err)
		}
	}
	cluster, err := kubeCluster(ctx, cl)
	if err != nil {
		return "", err
	}
	cfg.Clusters = slices.DeleteFunc(cfg.Clusters, func(c clientcmdv1.NamedCluster) bool { return c.Name == kubeName })
	cfg.AuthInfos = slices.DeleteFunc(cfg.AuthInfos, func(a clientcmdv1.NamedAuthInfo) bool { return a.Name == kubeName })
	cfg.Contexts = slices.DeleteFunc(cfg.Contexts, func(c clientcmdv1.NamedContext) bool { return c.Name == kubeName })
	cfg.Clusters = append(cfg.Clusters, clientcmdv1.NamedCluster{Name: kubeName, Cluster: cluster})
	cfg.AuthInfos = append(cfg.AuthInfos, clientcmdv1.NamedAuthInfo{Name: kubeName, AuthInfo: clientcmdv1.AuthInfo{Token: cl.Token}})
	cfg.Contexts = append(cfg.Contexts, clientcmdv1.NamedContext{Name: kubeName, Context: clientcmdv1.Context{Cluster: kubeName, AuthInfo: kubeName, Namespace: api.DefaultNamespace}})
	cfg.CurrentContext = kubeName
	if cfg.APIVersion == "" {
		cfg.APIVersion, cfg.Kind = "v1", "Config"
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	// A new file renamed over the old, 0600 from the start: it holds the token.
	if err := writePrivate(path, b); err != nil {
		return "", fmt.Errorf("write kubeconfig: %w", err)
	}
	return cluster.Server, nil
}

func newKubeconfigCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "kubeconfig [FILE]",
		Short: "Write the API address and token into a kubeconfig (default $KUBECONFIG or ~/.kube/config), context svc",
		Long: `Adds the cluster, the token and a context named svc to a kubeconfig and makes
the context current, so that kubectl, client-go and Orka's tools reach the
cluster's Kubernetes-style API (docs/kubernetes.md). Other entries of the file
are kept. The token is the one the CLI uses: sign in again (svc login
--kubeconfig) when a personal token expires.`,
		Example: "  svc config kubeconfig\n  kubectl get virtualmachineinstances -n orka-default",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			path, err := defaultKubeconfig()
			if err != nil {
				return err
			}
			if len(args) == 1 {
				path = args[0]
			}
			server, err := writeKubeconfig(cmd.Context(), cl, path)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Wrote context %q (%s) to %s.\n", kubeName, server, path)
			return nil
		},
	}
}

// kubeCluster is the cluster entry of a kubeconfig: the API over HTTPS
// (Kubernetes clients send a token over TLS alone), at the host the CLI
// reaches and the peer's HTTPS port, trusting the cluster's CA unless an
// uploaded certificate is served (then the system's roots judge it).
func kubeCluster(ctx context.Context, cl *api.Client) (clientcmdv1.Cluster, error) {
	u, err := url.Parse(cl.BaseURL)
	if err != nil {
		return clientcmdv1.Cluster{}, fmt.Errorf("the API address %q: %w", cl.BaseURL, err)
	}
	info, err := cl.ClusterInfo(ctx)
	if err != nil {
		return clientcmdv1.Cluster{}, err
	}
	cluster := clientcmdv1.Cluster{Server: cl.BaseURL}
	if u.Scheme == "http" {
		tls, err := url.Parse(info.TLSEndpoint)
		if err != nil || info.TLSEndpoint == "" {
			return clientcmdv1.Cluster{}, fmt.Errorf("peer %s names no HTTPS endpoint: give an https:// API address", u.Host)
		}
		cluster.Server = "https://" + net.JoinHostPort(u.Hostname(), tls.Port())
	}
	if info.CertData == "" {
		ca, err := cl.ClusterCA(ctx)
		if err != nil {
			return clientcmdv1.Cluster{}, fmt.Errorf("the cluster's CA for the kubeconfig: %w", err)
		}
		cluster.CertificateAuthorityData = []byte(ca.CACert)
	}
	return cluster, nil
}
