package host

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/poll"
	"github.com/svc-project/svc/testkit/syncbuf"
)

// stalling holds every VM status report until its caller stops waiting, as
// a leader too busy to commit it would; other writes go through.
type stalling struct {
	*replica
	held chan struct{} // a report is held
}

func (s *stalling) Apply(ctx context.Context, typ raftfsm.Type, body any) (any, error) {
	if typ != raftfsm.TypeVMStatus {
		return s.replica.Apply(ctx, typ, body)
	}
	select {
	case s.held <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, fmt.Errorf("apply: %w: the caller stopped waiting (%w)", raftfsm.ErrTimeout, ctx.Err())
}

// A VM deleted while its worker waits for its status report to be written
// stops the worker: the report it gave up is no failure, and no warning
// says a write timed out.
func TestHost_report_given_up_when_the_vm_is_deleted(t *testing.T) {
	r, images := seeded(t)
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prop := &stalling{replica: r, held: make(chan struct{}, 1)}
	drv := fake.New(hypervisor.DomainPrefix("n1"))
	h := New(Config{Name: "n1", Bind: "10.0.0.1", FSM: r.FSM, Driver: drv, Images: images, Proposer: prop,
		Blobs: noFetch{}, Ready: r, Healthy: func() bool { return true }, Interval: time.Hour, Log: log})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	r.Must(t, raftfsm.TypeVMCreate, vmOn("web", "n1", 20000))
	select {
	case <-prop.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker never reported the VM's status")
	}
	r.Must(t, raftfsm.TypeVMDelete, raftfsm.VMDelete{Namespace: api.DefaultNamespace, Name: "web"})
	poll.For(t, "the worker stopped", 10*time.Second, func() error {
		if !strings.Contains(logs.String(), "the worker stopped") {
			return fmt.Errorf("logs:\n%s", logs.String())
		}
		return nil
	})
	if out := logs.String(); strings.Contains(out, "level=WARN") {
		t.Fatalf("a given-up report was warned about:\n%s", out)
	}
}
