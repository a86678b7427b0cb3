package cluster

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// stalledRegistry accepts connections and never answers, until closed.
func stalledRegistry(t *testing.T) (addr string, release func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = l.Close()
			mu.Lock()
			defer mu.Unlock()
			for _, c := range conns {
				_ = c.Close()
			}
		})
	}
	t.Cleanup(release)
	return l.Addr().String(), release
}

func countJobs(jobs []api.Job) map[string]int {
	n := map[string]int{}
	for _, j := range jobs {
		n[j.State]++
	}
	return n
}

// A peer runs at most MaxJobs jobs at once, oldest first, and queues the
// rest; a namespace may have MaxOpenJobs jobs that have not ended, and one
// more is a 429 with Retry-After.
func TestJobs_bounded_per_peer_and_per_namespace(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{MaxJobs: 2})
	c.WaitLeader()
	cl := c.Client(c.Members[0])
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	reg, release := stalledRegistry(t)
	var first []string
	for i := range raftfsm.MaxOpenJobs {
		j, err := cl.PushImage(kit.Ctx(t), kit.NS, "tiny", fmt.Sprintf("%s/team/tiny:v%d", reg, i))
		if err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
		if i < 2 {
			first = append(first, j.JobName)
		}
	}
	_, err := cl.PushImage(kit.Ctx(t), kit.NS, "tiny", reg+"/team/tiny:one-too-many")
	if api.CodeOf(err) != http.StatusTooManyRequests {
		t.Fatalf("push %d: %v, want 429", raftfsm.MaxOpenJobs+1, err)
	}
	c.WaitFor("two jobs running", 10*time.Second, func() error {
		jobs, err := cl.ListJobs(kit.Ctx(t), kit.NS)
		if n := countJobs(jobs); err != nil || n["Running"] != 2 {
			return fmt.Errorf("%v %v", n, err)
		}
		return nil
	})
	for _, name := range first {
		if j, _ := cl.GetJob(kit.Ctx(t), kit.NS, name); j.State != "Running" {
			t.Fatalf("the oldest job %s is %s", name, j.State)
		}
	}
	// And never more, however many passes the job loop has made since.
	jobs, _ := cl.ListJobs(kit.Ctx(t), kit.NS)
	if n := countJobs(jobs); n["Running"] != 2 || n["Pending"] != raftfsm.MaxOpenJobs-2 {
		t.Fatalf("jobs by state: %v", n)
	}
	release()
	c.WaitFor("every job ended", 60*time.Second, func() error {
		jobs, _ := cl.ListJobs(kit.Ctx(t), kit.NS)
		if n := countJobs(jobs); n["Failed"] != raftfsm.MaxOpenJobs {
			return fmt.Errorf("%v", n)
		}
		return nil
	})
	if _, err := cl.PushImage(kit.Ctx(t), kit.NS, "tiny", reg+"/team/tiny:again"); err != nil {
		t.Fatalf("a push once the others ended: %v", err)
	}
}

// A push or deploy from a registry the peers may not contact (here:
// loopback, which this cluster's --registry-allow leaves out) is refused
// with 403 before any job is made or connection opened.
func TestJobs_refused_by_the_egress_policy(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{RegistryAllow: []string{}})
	c.WaitLeader()
	cl := c.Client(c.Members[0])
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	reg, _ := stalledRegistry(t)
	if _, err := cl.PushImage(kit.Ctx(t), kit.NS, "tiny", reg+"/x:v1"); api.CodeOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), "only public addresses") {
		t.Fatalf("push to a loopback registry: %v, want 403", err)
	}
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: reg + "/x:v1"}); api.CodeOf(err) != http.StatusForbidden {
		t.Fatalf("deploy from a loopback registry: %v, want 403", err)
	}
	if jobs, _ := cl.ListJobs(kit.Ctx(t), kit.NS); len(jobs) != 0 {
		t.Fatalf("jobs were made: %+v", jobs)
	}
}
