package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

// jobWatchPoll is how often 'svc job watch' and --wait look at a job.
const jobWatchPoll = time.Second

// newRegCredCmd is 'svc regcred': a namespace's registry credentials.
func newRegCredCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "regcred", Short: "Registry credentials of a namespace (admin)"}
	var user string
	var stdin, insecure bool
	add := &cobra.Command{
		Use:     "add SERVER -u USER --password-stdin",
		Short:   "Add or replace the credential for a registry server (host[:port])",
		Example: "  echo \"$PASS\" | svc regcred add registry.example.com:5000 -u ci --password-stdin",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !stdin {
				return errors.New("the password is read from standard input: give --password-stdin")
			}
			pw, err := bufio.NewReader(io.LimitReader(cmd.InOrStdin(), 4096)).ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			c, err := cl.SetRegistryCredential(cmd.Context(), g.namespace, api.RegistryCredentialRequest{
				Server: args[0], Username: user, Password: strings.TrimRight(pw, "\r\n"), AllowInsecure: insecure,
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "credential for %s (user %s) stored\n", c.Server, c.Username)
			return nil
		},
	}
	add.Flags().StringVarP(&user, "username", "u", "", "user name")
	add.Flags().BoolVar(&stdin, "password-stdin", false, "read the password from standard input")
	add.Flags().BoolVar(&insecure, "allow-insecure", false, "allow plain HTTP and unverified TLS to this registry")
	list := newListCmd(g, "List the namespace's registry credentials (never their passwords)",
		func(ctx context.Context, cl *api.Client) ([]api.RegistryCredential, error) {
			return cl.ListRegistryCredentials(ctx, g.namespace)
		},
		func(w io.Writer, items []api.RegistryCredential) error {
			rows := make([][]string, 0, len(items))
			for _, c := range items {
				rows = append(rows, []string{c.Server, c.Username, fmt.Sprint(c.AllowInsecure), c.CreatedAt.Format(time.RFC3339)})
			}
			return printTable(w, []string{"SERVER", "USERNAME", "INSECURE", "CREATED"}, rows)
		})
	remove := &cobra.Command{
		Use:   "remove SERVER",
		Short: "Remove the credential for a registry server",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			return cl.DeleteRegistryCredential(cmd.Context(), g.namespace, args[0])
		},
	}
	cmd.AddCommand(add, list, remove)
	return cmd
}

// newPushCmd is 'svc vm push VM REF' or 'svc image push IMAGE REF'.
func newPushCmd(g *globals, what string, push func(ctx context.Context, cl *api.Client, name, ref string) (api.JobName, error)) *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:     "push " + strings.ToUpper(what) + " REGISTRY/PATH[:TAG]",
		Short:   "Push the " + what + "'s disk to an OCI registry (a job; the tag defaults to latest)",
		Example: "  svc " + what + " push NAME registry.example.com:5000/team/disk:v1 --wait",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			j, err := push(cmd.Context(), cl, args[0], args[1])
			if err != nil {
				return err
			}
			return startedJob(cmd, cl, g.namespace, j.JobName, wait)
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the job to end, with its progress")
	return cmd
}

// newJobCmd is 'svc job get|list|watch'.
func newJobCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "job", Short: "Push and pull jobs"}
	get := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a job",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.clientFor()
			if err != nil {
				return err
			}
			j, err := cl.GetJob(cmd.Context(), g.namespace, args[0])
			if err != nil {
				return err
			}
			return printOut(cmd.OutOrStdout(), g.output, j, func(w io.Writer) error { return printJobs(w, []api.Job{j}) })
		},
	}
	addOutputFlag(get, g, "table")
	list := newListCmd(g, "List the namespace's jobs (kept an hour after they end)",
		func(ctx context.Context, cl *api.Client) ([]api.Job, error) { return cl.ListJobs(ctx, g.namespace) }, printJobs)
	watch := &cobra.Command{
		Use:   "watch NAME",
		Short: "Follow a job with a progress bar until it ends (exit 1 if it failed)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			return watchJob(cmd.Context(), cmd.OutOrStdout(), cl, g.namespace, args[0])
		},
	}
	cmd.AddCommand(get, list, watch)
	return cmd
}

func printJobs(w io.Writer, jobs []api.Job) error {
	rows := make([][]string, 0, len(jobs))
	for _, j := range jobs {
		what := j.Image
		if j.VM != "" {
			what = "vm " + j.VM
		}
		rows = append(rows, []string{j.Name, j.Type, j.State, what, j.Reference, progressText(j), j.Message})
	}
	return printTable(w, []string{"NAME", "TYPE", "STATE", "SOURCE", "REFERENCE", "PROGRESS", "MESSAGE"}, rows)
}

func progressText(j api.Job) string {
	if j.BytesTotal <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", j.BytesDone*100/j.BytesTotal)
}

// startedJob says which job started, or with wait follows it to its end.
func startedJob(cmd *cobra.Command, cl *api.Client, ns, name string, wait bool) error {
	if !wait {
		fmt.Fprintf(cmd.OutOrStdout(), "job %s started (svc job watch %s)\n", name, name)
		return nil
	}
	return watchJob(cmd.Context(), cmd.OutOrStdout(), cl, ns, name)
}

// watchJob follows a job with a progress bar until it ends; a failed job is
// an error.
func watchJob(ctx context.Context, out io.Writer, cl *api.Client, ns, name string) error {
	var bar *progressbar.ProgressBar
	tick := time.NewTicker(jobWatchPoll)
	defer tick.Stop()
	for {
		j, err := cl.GetJob(ctx, ns, name)
		if err != nil {
			return err
		}
		if j.BytesTotal > 0 {
			if bar == nil {
				bar = progressbar.DefaultBytes(j.BytesTotal, j.Type+" "+first(j.Reference, j.Image))
			}
			_ = bar.Set64(j.BytesDone)
		}
		switch j.State {
		case api.JobSucceeded:
			if bar != nil {
				_ = bar.Finish()
			}
			fmt.Fprintf(out, "job %s succeeded: %s\n", j.Name, j.Message)
			return nil
		case api.JobFailed:
			if bar != nil {
				_ = bar.Finish()
			}
			return fmt.Errorf("job %s failed: %s", j.Name, j.Message)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
