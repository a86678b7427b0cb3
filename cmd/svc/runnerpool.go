package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

func newRunnerPoolCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "runnerpool", Aliases: []string{"rp"}, Short: "Runner pools: a VM of its own for every GitHub Actions job (docs/runnerpools.md)"}
	var req api.RunnerPoolRequest
	var keyFile, tokenFile, secretFile string
	create := &cobra.Command{
		Use:   "create NAME --vmconfig CFG --labels L,... --max N --github-url URL (--token-file F | --app-id N --installation-id N --private-key-file F) --webhook-secret-file F",
		Short: "Create or replace a runner pool (admin)",
		Long: `Create or replace a runner pool: for every GitHub Actions job queued with runs-on labels the pool
has, the leader deploys a VM from the VM config, starts a just-in-time runner for that job in it
through the guest agent (--runner-command), and deletes the VM once the job completed. At most
--max VMs at once; a job's VM lives at most --job-timeout and 5 minutes. Point a GitHub webhook
(workflow_job events, content type application/json, the same secret) at the pool's webhookPath
on any peer; jobs a lost delivery missed are found by polling GitHub. Each runner is registered with
self-hosted, the image's OS and architecture (Linux or macOS, X64 or ARM64) and --labels, so
workflows write runs-on: [self-hosted, <label>]. A GitHub Enterprise Server on a private address must
be listed in every peer's --registry-allow (the egress rule).`,
		Example: "  svc runnerpool create linux --vmconfig ci-linux --labels svc-linux --max 4 \\\n" +
			"      --github-url https://github.com/acme --app-id 12345 --installation-id 678 \\\n" +
			"      --private-key-file app.pem --webhook-secret-file hook.secret",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Name = args[0]
			for _, f := range []struct {
				path string
				into *string
			}{{keyFile, &req.GitHub.PrivateKey}, {tokenFile, &req.GitHub.Token}, {secretFile, &req.GitHub.WebhookSecret}} {
				if f.path == "" {
					continue
				}
				b, err := os.ReadFile(f.path)
				if err != nil {
					return err
				}
				*f.into = strings.TrimSpace(string(b))
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			p, err := cl.CreateRunnerPool(cmd.Context(), g.namespace, req)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "runner pool %s created; GitHub's webhook: <API address>%s (workflow_job events)\n", p.Name, p.WebhookPath)
			return nil
		},
	}
	f := create.Flags()
	f.StringVar(&req.VMConfig, "vmconfig", "", "the VM config jobs' VMs are deployed from (a warm one starts in about a second)")
	f.StringSliceVar(&req.Labels, "labels", nil, "the pool's own runs-on labels (runners also get self-hosted, the OS and the architecture)")
	f.IntVar(&req.Max, "max", 4, "the most VMs at once")
	f.StringVar(&req.RunnerCommand, "runner-command", "", "the command that starts the runner in the guest; {jitconfig} is the job's configuration (default "+api.DefaultRunnerCommand+")")
	f.StringVar(&req.JobTimeout, "job-timeout", "6h", "the longest a job's VM lives (and 5 minutes)")
	f.StringVar(&req.GitHub.URL, "github-url", "", "the organisation or repository runners register with (https://github.com/ORG[/REPO])")
	f.StringVar(&req.GitHub.APIBase, "github-api", "", "GitHub's REST API (default https://api.github.com/; GitHub Enterprise Server: https://HOST/api/v3/)")
	f.Int64Var(&req.GitHub.AppID, "app-id", 0, "the GitHub App's id")
	f.Int64Var(&req.GitHub.InstallationID, "installation-id", 0, "the App's installation id")
	f.StringVar(&keyFile, "private-key-file", "", "the App's private key (PEM)")
	f.StringVar(&tokenFile, "token-file", "", "a fine-grained token instead of an App (administration: write)")
	f.StringVar(&secretFile, "webhook-secret-file", "", "the webhook's secret")
	f.Int64Var(&req.GitHub.RunnerGroupID, "runner-group", 0, "the runner group (default 1, the default group)")
	for _, name := range []string{"vmconfig", "labels", "github-url", "webhook-secret-file"} {
		_ = create.MarkFlagRequired(name)
	}
	list := newListCmd(g, "List the runner pools with what they are doing",
		func(ctx context.Context, cl *api.Client) ([]api.RunnerPool, error) {
			return cl.ListRunnerPools(ctx, g.namespace)
		},
		printRunnerPools)
	get := &cobra.Command{
		Use: "get NAME", Short: "Show a runner pool and its status", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.clientFor()
			if err != nil {
				return err
			}
			p, err := cl.GetRunnerPool(cmd.Context(), g.namespace, args[0])
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, p, func(w io.Writer) error { return printRunnerPools(w, []api.RunnerPool{p}) })
		},
	}
	addOutputFlag(get, g, "table")
	jobs := &cobra.Command{
		Use: "jobs POOL", Short: "List the jobs a runner pool took", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.clientFor()
			if err != nil {
				return err
			}
			js, err := cl.ListRunnerJobs(cmd.Context(), g.namespace, args[0])
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, api.List[api.RunnerJob]{Items: js}, func(w io.Writer) error { return printRunnerJobs(w, js) })
		},
	}
	addOutputFlag(jobs, g, "table")
	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a runner pool: its VMs are deleted (admin)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := cl.DeleteRunnerPool(cmd.Context(), g.namespace, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "runner pool %s deleted\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, list, get, jobs, del)
	return cmd
}

func printRunnerPools(w io.Writer, ps []api.RunnerPool) error {
	rows := make([][]string, 0, len(ps))
	for _, p := range ps {
		s := p.Status
		rows = append(rows, []string{p.Name, p.VMConfig, strings.Join(p.Labels, ","), strconv.Itoa(s.VMs) + "/" + strconv.Itoa(p.Max),
			strconv.Itoa(s.Queued), strconv.Itoa(s.Starting + s.Running), strconv.Itoa(s.Done),
			fmt.Sprintf("%.1fs/%.1fs", s.StartP50, s.StartP95), orNone([]string{s.Waiting})})
	}
	return printTable(w, []string{"NAME", "VMCONFIG", "LABELS", "VMS", "QUEUED", "RUNNING", "DONE", "START P50/P95", "WAITING"}, rows)
}

func printRunnerJobs(w io.Writer, js []api.RunnerJob) error {
	rows := make([][]string, 0, len(js))
	for _, j := range js {
		rows = append(rows, []string{strconv.FormatInt(j.ID, 10), j.Repo, j.State, orNone([]string{j.VM}), orNone([]string{j.Conclusion}), orNone([]string{j.Message})})
	}
	return printTable(w, []string{"JOB", "REPO", "STATE", "VM", "CONCLUSION", "MESSAGE"}, rows)
}
