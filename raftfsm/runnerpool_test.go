package raftfsm

import (
	"testing"
	"time"

	"github.com/svc-project/svc/api"
)

func testPool() RunnerPool {
	return RunnerPool{Namespace: api.DefaultNamespace, Name: "ci", VMConfig: "linux", Labels: []string{"svc-linux"}, Max: 4,
		RunnerCommand: "run.sh --jitconfig {jitconfig}", JobTimeoutSeconds: 3600,
		GitHub: GitHubPool{URL: "https://github.com/acme/app", SealedToken: []byte("t"), SealedWebhookSecret: []byte("s")}}
}

func TestRunnerJob_one_VM_per_job(t *testing.T) {
	ns := api.DefaultNamespace
	job := func(state, vm string) []byte {
		return mustEncode(t, TypeRunnerJobUpdate, RunnerJobUpdate{Job: RunnerJob{Namespace: ns, Pool: "ci", ID: 7, State: state, VM: vm}, Time: t0})
	}
	pool := func(change func(*RunnerPool)) []byte {
		p := testPool()
		change(&p)
		return mustEncode(t, TypeRunnerPoolSet, RunnerPoolSet{Pool: p})
	}
	runSteps(t, []step{
		{name: "no max", cmd: pool(func(p *RunnerPool) { p.Max = 0 }), wantErr: ErrInvalid},
		{name: "no webhook secret", cmd: pool(func(p *RunnerPool) { p.GitHub.SealedWebhookSecret = nil }), wantErr: ErrInvalid},
		{name: "no credentials", cmd: pool(func(p *RunnerPool) { p.GitHub.SealedToken = nil }), wantErr: ErrInvalid},
		{name: "a job before its pool", cmd: job(RunnerJobQueued, ""), wantErr: ErrNotFound},
		{name: "the pool", cmd: pool(func(*RunnerPool) {})},
		{name: "queued", cmd: job(RunnerJobQueued, "")},
		{name: "queued again (webhook and poll)", cmd: job(RunnerJobQueued, ""), check: func(t *testing.T, f *FSM) {
			if js := f.RunnerJobs(ns, "ci"); len(js) != 1 || js[0].State != RunnerJobQueued {
				t.Fatalf("jobs %+v", js)
			}
		}},
		{name: "a claim names the VM", cmd: job(RunnerJobStarting, ""), wantErr: ErrInvalid},
		{name: "claimed", cmd: job(RunnerJobStarting, "ci-7")},
		{name: "claimed twice (another leader)", cmd: job(RunnerJobStarting, "ci-7-b"), wantErr: ErrConflict},
		{name: "requeued: no room", cmd: mustEncode(t, TypeRunnerJobUpdate, RunnerJobUpdate{Job: RunnerJob{Namespace: ns, Pool: "ci", ID: 7, State: RunnerJobQueued, Message: "no node can take it"}, Requeue: true, Time: t0}),
			check: func(t *testing.T, f *FSM) {
				j, _ := f.RunnerJob(ns, "ci", 7)
				if j.State != RunnerJobQueued || j.VM != "" || j.Message != "no node can take it" {
					t.Fatalf("job %+v", j)
				}
			}},
		{name: "claimed again", cmd: job(RunnerJobStarting, "ci-7")},
		{name: "running", cmd: job(RunnerJobRunning, ""), check: func(t *testing.T, f *FSM) {
			if j, _ := f.RunnerJob(ns, "ci", 7); j.StartedAt == nil || j.VM != "ci-7" {
				t.Fatalf("job %+v", j)
			}
		}},
		{name: "never back", cmd: job(RunnerJobQueued, ""), wantErr: ErrConflict},
		{name: "completed", cmd: job(RunnerJobCompleted, "")},
		{name: "done", cmd: job(RunnerJobDone, ""), check: func(t *testing.T, f *FSM) {
			if j, _ := f.RunnerJob(ns, "ci", 7); j.DoneAt == nil {
				t.Fatalf("job %+v", j)
			}
		}},
		{name: "the pool goes with its jobs", cmd: mustEncode(t, TypeRunnerPoolDelete, RunnerPoolDelete{Namespace: ns, Name: "ci"}), check: func(t *testing.T, f *FSM) {
			if len(f.RunnerJobs(ns, "ci")) != 0 || len(f.RunnerPools(ns)) != 0 {
				t.Fatal("left over")
			}
		}},
	})
}

func TestRunnerJob_done_jobs_are_bounded(t *testing.T) {
	ns := api.DefaultNamespace
	steps := []step{{name: "pool", cmd: mustEncode(t, TypeRunnerPoolSet, RunnerPoolSet{Pool: testPool()})}}
	for i := int64(1); i <= MaxDoneRunnerJobs+5; i++ {
		for _, st := range []string{RunnerJobQueued, RunnerJobCompleted, RunnerJobDone} {
			steps = append(steps, step{name: st, cmd: mustEncode(t, TypeRunnerJobUpdate, RunnerJobUpdate{Job: RunnerJob{Namespace: ns, Pool: "ci", ID: i, State: st}, Time: t0.Add(time.Duration(i) * time.Second)})})
		}
	}
	steps = append(steps, step{name: "count", cmd: mustEncode(t, TypeRunnerJobUpdate, RunnerJobUpdate{Job: RunnerJob{Namespace: ns, Pool: "ci", ID: 9999, State: RunnerJobQueued}, Time: t0}), check: func(t *testing.T, f *FSM) {
		js := f.RunnerJobs(ns, "ci")
		if len(js) != MaxDoneRunnerJobs+1 {
			t.Fatalf("%d jobs kept", len(js))
		}
		if _, ok := f.RunnerJob(ns, "ci", 1); ok {
			t.Fatal("the oldest done job is still listed")
		}
	}})
	runSteps(t, steps)
}
