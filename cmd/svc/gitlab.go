package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/runners/gitlab"
)

// newGitLabExecutorCmd is 'svc gitlab-executor config|prepare|run|cleanup':
// the driver of gitlab-runner's custom executor.
func newGitLabExecutorCmd(g *globals) *cobra.Command {
	d := &gitlab.Driver{Version: version}
	cmd := &cobra.Command{
		Use:   "gitlab-executor",
		Short: "gitlab-runner's custom executor: a VM of svc for each CI job (config, prepare, run, cleanup)",
		Long: `The driver of gitlab-runner's custom executor: config names the job's VM and makes the job's key
(passed to the later stages in job_env), prepare deploys the VM (from --vmconfig or --image, or the
job's variable SVC_VMCONFIG or SVC_IMAGE), run carries each of the job's scripts into the guest through
its agent and streams the output, cleanup deletes the VM. The VM is gl-<runner>-<job id>-<random>:
a stage touches only a VM carrying its job's key, never one another job made. It lives at most the
job's timeout and 5 minutes. On SIGTERM (the job cancelled or timed out) run sends TERM to every
process of the script in the guest, KILL after --grace. A failing script exits
$BUILD_FAILURE_EXIT_CODE (the job failed), anything else $SYSTEM_FAILURE_EXIT_CODE (the runner may
retry). The token and API address come from the runner's environment (SVC_TOKEN, SVC_API_URL: a
service account token of the namespace). config.toml: docs/gitlab.md.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&d.VMConfig, "vmconfig", "", "the VM config jobs' VMs are deployed from (a warm one starts in about a second)")
	pf.StringVar(&d.Image, "image", "", "the image jobs' VMs are deployed from, without a VM config")
	pf.StringVar(&d.Shell, "shell", "auto", "the program that runs the job's scripts in the guest (auto: bash where the guest has it, else sh)")
	pf.DurationVar(&d.Grace, "grace", 10*time.Second, "on SIGTERM, how long the script's processes have between TERM and KILL")
	pf.StringVar(&d.BuildsDir, "builds-dir", "/builds", "where the guest keeps the builds")
	pf.StringVar(&d.CacheDir, "cache-dir", "/cache", "where the guest keeps the cache")
	stage := func(use, short string, args cobra.PositionalArgs, run func(ctx context.Context, args []string) error) *cobra.Command {
		return &cobra.Command{
			Use: use, Short: short, Args: args,
			RunE: func(c *cobra.Command, a []string) error {
				d.Namespace, d.Stdout, d.Stderr = g.namespace, c.OutOrStdout(), c.ErrOrStderr()
				if c.Name() != "config" { // config talks to no cluster
					cl, err := g.client()
					if err != nil {
						fmt.Fprintln(c.ErrOrStderr(), "svc:", err)
						return guestExit{gitlab.ExitCode(err, os.Getenv)}
					}
					d.Client = cl
				}
				if err := run(c.Context(), a); err != nil {
					fmt.Fprintln(c.ErrOrStderr(), "svc:", err)
					return guestExit{gitlab.ExitCode(err, os.Getenv)}
				}
				return nil
			},
		}
	}
	cmd.AddCommand(
		stage("config", "Describe the executor to gitlab-runner (JSON)", cobra.NoArgs, func(ctx context.Context, _ []string) error { return d.Config(ctx) }),
		stage("prepare", "Deploy the job's VM and wait for its agent", cobra.NoArgs, func(ctx context.Context, _ []string) error { return d.Prepare(ctx) }),
		stage("run SCRIPT STAGE", "Run one of the job's scripts in its VM", cobra.ExactArgs(2), func(ctx context.Context, a []string) error { return d.Run(ctx, a[0], a[1]) }),
		stage("cleanup", "Delete the job's VM", cobra.NoArgs, func(ctx context.Context, _ []string) error { return d.Cleanup(ctx) }),
	)
	return cmd
}
