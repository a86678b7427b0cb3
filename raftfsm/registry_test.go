package raftfsm

import (
	"fmt"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
)

func TestRegistryCredential_set_replace_delete(t *testing.T) {
	ns := api.DefaultNamespace
	set := func(server, user string) []byte {
		return mustEncode(t, TypeRegCredSet, RegistryCredentialSet{Credential: RegistryCredential{Namespace: ns, Server: server, Username: user, SealedPassword: []byte("sealed")}})
	}
	runSteps(t, []step{
		{name: "set", cmd: set("reg.example:5000", "a")},
		{name: "replace", cmd: set("reg.example:5000", "b"), check: func(t *testing.T, f *FSM) {
			got := f.RegistryCredentials(ns)
			if len(got) != 1 || got[0].Username != "b" || string(got[0].SealedPassword) != "sealed" {
				t.Fatalf("credentials %+v", got)
			}
		}},
		{name: "a path is not a server", cmd: set("reg.example/x", "a"), wantErr: ErrInvalid},
		{name: "no server", cmd: set("", "a"), wantErr: ErrInvalid},
		{name: "unknown namespace", cmd: mustEncode(t, TypeRegCredSet, RegistryCredentialSet{Credential: RegistryCredential{Namespace: "nope", Server: "r"}}), wantErr: ErrNotFound},
		{name: "delete", cmd: mustEncode(t, TypeRegCredDelete, RegistryCredentialDelete{Namespace: ns, Server: "reg.example:5000"}), check: func(t *testing.T, f *FSM) {
			if len(f.RegistryCredentials(ns)) != 0 {
				t.Fatal("still there")
			}
		}},
		{name: "delete twice", cmd: mustEncode(t, TypeRegCredDelete, RegistryCredentialDelete{Namespace: ns, Server: "reg.example:5000"}), wantErr: ErrNotFound},
	})
}

func TestJob_lifecycle(t *testing.T) {
	ns := api.DefaultNamespace
	job := Job{Name: "push-a-x1", Namespace: ns, Type: JobPush, Node: "n1", Reference: "r:5000/a:b", VM: "a", StartTime: t0}
	update := func(state string, done int64) []byte {
		return mustEncode(t, TypeJobUpdate, JobUpdate{Namespace: ns, Name: job.Name, State: state, BytesDone: done, BytesTotal: 100, Time: t0.Add(time.Minute)})
	}
	runSteps(t, []step{
		{name: "create", cmd: mustEncode(t, TypeJobCreate, JobCreate{Job: job}), check: func(t *testing.T, f *FSM) {
			if j, ok := f.Job(ns, job.Name); !ok || j.State != JobPending || j.CompletionTime != nil {
				t.Fatalf("job %+v", j)
			}
		}},
		{name: "twice", cmd: mustEncode(t, TypeJobCreate, JobCreate{Job: job}), wantErr: ErrAlreadyExists},
		{name: "unknown node", cmd: mustEncode(t, TypeJobCreate, JobCreate{Job: Job{Name: "j2", Namespace: ns, Type: JobPull, Node: "n9"}}), wantErr: ErrNotFound},
		{name: "unknown type", cmd: mustEncode(t, TypeJobCreate, JobCreate{Job: Job{Name: "j2", Namespace: ns, Type: "copy", Node: "n1"}}), wantErr: ErrInvalid},
		{name: "not deletable while it runs", cmd: mustEncode(t, TypeJobDelete, JobDelete{Namespace: ns, Name: job.Name}), wantErr: ErrConflict},
		{name: "progress", cmd: update(JobRunning, 40)},
		{name: "bad state", cmd: update(JobPending, 40), wantErr: ErrInvalid},
		{name: "done", cmd: update(JobSucceeded, 100), check: func(t *testing.T, f *FSM) {
			j, _ := f.Job(ns, job.Name)
			if j.State != JobSucceeded || j.BytesDone != 100 || j.CompletionTime == nil || !j.CompletionTime.Equal(t0.Add(time.Minute)) {
				t.Fatalf("job %+v", j)
			}
		}},
		{name: "no update after the end", cmd: update(JobFailed, 100), wantErr: ErrConflict},
		{name: "delete", cmd: mustEncode(t, TypeJobDelete, JobDelete{Namespace: ns, Name: job.Name}), check: func(t *testing.T, f *FSM) {
			if len(f.Jobs("")) != 0 {
				t.Fatal("still there")
			}
		}},
	})
}

func TestCatalogSet_cases(t *testing.T) {
	set := func(rs ...string) []byte { return mustEncode(t, TypeCatalogSet, CatalogSet{Repositories: rs}) }
	many := make([]string, MaxCatalogs+1)
	for i := range many {
		many[i] = fmt.Sprintf("r.test/os/%d", i)
	}
	runSteps(t, []step{
		{name: "set", cmd: set("r.test:5000/os/images", "r.test:5000/os/isos", "r.test:5000/os/images"), check: func(t *testing.T, f *FSM) {
			if c := f.Catalogs(); len(c) != 2 || c[0] != "r.test:5000/os/images" {
				t.Fatalf("catalogs %v", c)
			}
		}},
		{name: "no host", cmd: set("os/images"), wantErr: ErrInvalid},
		{name: "a tag", cmd: set("r.test/os/images:1"), wantErr: ErrInvalid},
		{name: "too many", cmd: set(many...), wantErr: ErrInvalid},
		{name: "clear", cmd: set(), check: func(t *testing.T, f *FSM) {
			if c := f.Catalogs(); len(c) != 0 {
				t.Fatalf("catalogs %v", c)
			}
		}},
	})
}
