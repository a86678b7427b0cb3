package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

func TestTouched_kinds(t *testing.T) {
	closed := func() <-chan struct{} { c := make(chan struct{}); close(c); return c }
	open := func() <-chan struct{} { return make(chan struct{}) }
	for _, tc := range []struct {
		name                       string
		vm, node, image, blob, job <-chan struct{}
		want                       []string
	}{
		{"a VM", closed(), open(), open(), open(), open(), []string{watchVMs, watchNodes}},
		{"a node", open(), closed(), open(), open(), open(), []string{watchVMs, watchNodes}},
		{"a blob", open(), open(), open(), closed(), open(), []string{watchNodes, watchImages}},
		{"a job", open(), open(), open(), open(), closed(), []string{watchJobs}},
		{"everything (a restore)", closed(), closed(), closed(), closed(), closed(), watchKinds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := touched(tc.vm, tc.node, tc.image, tc.blob, tc.job); !slices.Equal(got, tc.want) {
				t.Fatalf("%v, want %v", got, tc.want)
			}
		})
	}
}

// TestWatch_burst_of_changes_every_one_carried applies a burst of VM
// creates while one watch streams and then resumes a second watch from the
// version before the burst: each must carry every VM. (The hub once tagged
// a comparison's events with the index read after it, so a change applied
// during one comparison came in the next with a version the watcher had
// already passed, and was never sent.)
func TestWatch_burst_of_changes_every_one_carried(t *testing.T) {
	const burst = 300
	fb := newFakeBackend(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	apply := func(typ raftfsm.Type, body any) {
		if _, err := fb.applyAny(ctx, typ, body); err != nil {
			t.Error(err)
		}
	}
	apply(raftfsm.TypeImageCreate, raftfsm.ImageCreate{Image: raftfsm.Image{Name: "img", Namespace: api.DefaultNamespace, Digest: "sha256:aa", Format: "qcow2"}, Holder: "n1"})
	apply(raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{Name: "w1", NodeFacts: raftfsm.NodeFacts{Addr: "10.3.0.1", Capacity: raftfsm.Capacity{CPU: 4 * burst, MemoryBytes: burst << 31}}, Phase: api.PhaseReady})
	s := New(fakeConfig(fb, Config{}))
	go s.RunWatches(ctx, "")
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	tok := adminToken(t)
	watch := func(query string) (*bufio.Scanner, func()) {
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		req, err := http.NewRequestWithContext(wctx, http.MethodGet, srv.URL+"/api/v1/namespaces/svc-default/vms?watch=true&timeoutSeconds=30"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("watch: %s", resp.Status)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		return sc, func() { resp.Body.Close(); wcancel() }
	}
	next := func(sc *bufio.Scanner) api.WatchEvent {
		if !sc.Scan() {
			t.Fatalf("the watch ended: %v", sc.Err())
		}
		var ev api.WatchEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	// The list (empty) ends with a bookmark: the version before the burst.
	live, stop := watch("")
	defer stop()
	ev := next(live)
	for ev.Type != "BOOKMARK" {
		ev = next(live)
	}
	before := ev.ResourceVersion
	go func() {
		for i := range burst {
			apply(raftfsm.TypeVMCreate, raftfsm.VMCreate{VM: raftfsm.VM{Name: fmt.Sprintf("vm-%d", i), Namespace: api.DefaultNamespace, Node: "w1", Image: "img", ImageDigest: "sha256:aa",
				VMOptions: raftfsm.VMOptions{CPU: 1, MemoryBytes: 1 << 30}, SSHPort: 20000 + 2*i, ScreensharePort: 20001 + 2*i, VNCPort: 5900 + i}})
		}
	}()
	collect := func(sc *bufio.Scanner) {
		seen := map[string]bool{}
		for len(seen) < burst {
			ev := next(sc)
			if ev.Type != eventAdded {
				continue
			}
			var vm api.VM
			if err := json.Unmarshal(ev.Object, &vm); err != nil {
				t.Fatal(err)
			}
			seen[vm.Name] = true
		}
	}
	collect(live)
	resumed, stop2 := watch("&resourceVersion=" + before)
	defer stop2()
	collect(resumed)
}
