package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

// globals are the flags every client command shares.
type globals struct {
	apiURL    string
	token     string
	namespace string
	output    string
}

func newRootCmd() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "svc",
		Short:         "svc runs VMs on a cluster of hosts: the peer (svc agent) and its command-line client",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.apiURL, "api-url", "", "API address (overrides $SVC_API_URL and the config file)")
	pf.StringVar(&g.token, "token", "", "bearer token (overrides $SVC_TOKEN and the config file)")
	pf.StringVarP(&g.namespace, "namespace", "n", first(os.Getenv("SVC_NAMESPACE"), api.DefaultNamespace), "namespace (also $SVC_NAMESPACE)")
	root.AddCommand(newVersionCmd(g), newAuditCmd(g), newAgentCmd(), newVZRunnerCmd(), newConfigCmd(g), newNodeCmd(g), newClusterCmd(g), newVMCmd(g), newVMConfigCmd(g), newImageCmd(g), newISOCmd(g),
		newAdminCmd(), newUserCmd(g), newLoginCmd(g), newNamespaceCmd(g), newRoleBindingCmd(g), newServiceAccountCmd(g),
		newRegCredCmd(g), newJobCmd(g), newRemoteCmd(g), newGitLabExecutorCmd(g), newRunnerPoolCmd(g))
	markUsageErrors(root)
	addCompletions(root, g)
	return root
}
