package raftfsm

import (
	"strings"
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

// GitHub gives a queued job to any idle runner of the pool: the records
// follow, so every job still waiting keeps one VM on its way.
func TestRunnerJobRan_records_follow_github(t *testing.T) {
	ns := api.DefaultNamespace
	upd := func(id int64, state, vm string) []byte {
		return mustEncode(t, TypeRunnerJobUpdate, RunnerJobUpdate{Job: RunnerJob{Namespace: ns, Pool: "ci", ID: id, State: state, VM: vm}, Time: t0})
	}
	ran := func(id int64, state, runner string) []byte {
		return mustEncode(t, TypeRunnerJobRan, RunnerJobRan{Job: RunnerJob{Namespace: ns, Pool: "ci", ID: id, State: state, Conclusion: map[bool]string{true: "success"}[state == RunnerJobCompleted]}, Runner: runner, Time: t0})
	}
	want := func(want map[int64][2]string) func(*testing.T, *FSM) {
		return func(t *testing.T, f *FSM) {
			t.Helper()
			for id, w := range want {
				j, ok := f.RunnerJob(ns, "ci", id)
				if !ok || j.State != w[0] || j.VM != w[1] {
					t.Fatalf("job %d: %+v, want %s on %q", id, j, w[0], w[1])
				}
			}
		}
	}
	runSteps(t, []step{
		{name: "pool", cmd: mustEncode(t, TypeRunnerPoolSet, RunnerPoolSet{Pool: testPool()})},
		{name: "1", cmd: upd(1, RunnerJobQueued, "")},
		{name: "2", cmd: upd(2, RunnerJobQueued, "")},
		{name: "3", cmd: upd(3, RunnerJobQueued, "")},
		{name: "1 claimed", cmd: upd(1, RunnerJobStarting, "ci-1")},
		{name: "2 claimed", cmd: upd(2, RunnerJobStarting, "ci-2")},
		{name: "1 running", cmd: mustEncode(t, TypeRunnerJobUpdate, RunnerJobUpdate{Job: RunnerJob{Namespace: ns, Pool: "ci", State: RunnerJobRunning}, ByVM: "ci-1", Time: t0})},
		{name: "ci-1's runner took job 2: swapped", cmd: ran(2, RunnerJobRunning, "ci-1"),
			check: want(map[int64][2]string{1: {RunnerJobStarting, "ci-2"}, 2: {RunnerJobRunning, "ci-1"}})},
		{name: "the runner's id, by VM", cmd: mustEncode(t, TypeRunnerJobUpdate, RunnerJobUpdate{Job: RunnerJob{Namespace: ns, Pool: "ci", State: RunnerJobStarting, RunnerID: 42}, ByVM: "ci-2", Time: t0}),
			check: func(t *testing.T, f *FSM) {
				if j, _ := f.RunnerJob(ns, "ci", 1); j.RunnerID != 42 || j.State != RunnerJobStarting {
					t.Fatalf("job 1: %+v", j)
				}
			}},
		{name: "the leader still starting ci-2 speaks of the VM", cmd: mustEncode(t, TypeRunnerJobUpdate, RunnerJobUpdate{Job: RunnerJob{Namespace: ns, Pool: "ci", State: RunnerJobRunning}, ByVM: "ci-2", Time: t0}),
			check: want(map[int64][2]string{1: {RunnerJobRunning, "ci-2"}})},
		{name: "a stale word of job 2 on ci-2 is refused", cmd: upd(2, RunnerJobCompleted, "ci-2"), wantErr: ErrConflict},
		{name: "ci-2's runner took job 3, which had no VM: job 1 waits again", cmd: ran(3, RunnerJobRunning, "ci-2"),
			check: func(t *testing.T, f *FSM) {
				want(map[int64][2]string{1: {RunnerJobQueued, ""}, 3: {RunnerJobRunning, "ci-2"}})(t, f)
				if j, _ := f.RunnerJob(ns, "ci", 1); j.Attempts != 1 || !strings.Contains(j.Message, "took job 3") {
					t.Fatalf("job 1: %+v", j)
				}
			}},
		{name: "1 claimed again: a new VM", cmd: upd(1, RunnerJobStarting, "ci-1-r2"), check: func(t *testing.T, f *FSM) {
			if j, _ := f.RunnerJob(ns, "ci", 1); j.Attempts != 2 {
				t.Fatalf("job 1: %+v", j)
			}
		}},
		{name: "2 completed on ci-1", cmd: ran(2, RunnerJobCompleted, "ci-1"), check: want(map[int64][2]string{2: {RunnerJobCompleted, "ci-1"}})},
		{name: "said twice", cmd: ran(2, RunnerJobCompleted, "ci-1"), check: want(map[int64][2]string{2: {RunnerJobCompleted, "ci-1"}, 1: {RunnerJobStarting, "ci-1-r2"}})},
		{name: "a job the pool never heard of takes ci-1-r2", cmd: ran(9, RunnerJobRunning, "ci-1-r2"),
			check: want(map[int64][2]string{9: {RunnerJobRunning, "ci-1-r2"}, 1: {RunnerJobQueued, ""}})},
		{name: "4 queued, then taken by a runner of no VM of the pool", cmd: upd(4, RunnerJobQueued, "")},
		{name: "4 elsewhere", cmd: ran(4, RunnerJobRunning, "laptop"), check: want(map[int64][2]string{4: {RunnerJobDone, ""}})},
		{name: "1 cancelled before any runner", cmd: ran(1, RunnerJobCompleted, ""), check: want(map[int64][2]string{1: {RunnerJobDone, ""}})},
		{name: "ran needs a state", cmd: ran(3, RunnerJobQueued, "ci-2"), wantErr: ErrInvalid},
		{name: "ByVM of no job", cmd: mustEncode(t, TypeRunnerJobUpdate, RunnerJobUpdate{Job: RunnerJob{Namespace: ns, Pool: "ci", State: RunnerJobRunning}, ByVM: "ci-77", Time: t0}), wantErr: ErrNotFound},
	})
}
