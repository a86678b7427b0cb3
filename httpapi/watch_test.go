package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
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
	vmFleet(t, fb, 1, burst)
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
	go applyVMs(t, fb, 0, 0, burst)
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

// A change the state applies while the hub takes its views reaches every
// watcher, whatever version it holds. The hub once stamped a comparison's
// events with the index read before it: a comparison that began at the
// version a watcher had just listed at, and took in a change applied
// meanwhile, stamped that change with the watcher's own version, and the
// watcher (TestKube_orka_tools_flow's watch of a saved image, under load)
// never saw it. Read after the views, the index let a change applied after
// them come in the next comparison with a version already passed (the test
// above). Each case applies VMs at some views of one comparison.
func TestWatchHub_a_change_during_a_comparison_reaches_every_watcher(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kinds   []string
		applyAt string // the kind whose views apply a VM
		times   int    // at how many of them
	}{
		{"in the view", []string{watchVMs}, watchVMs, 1},
		{"after the view, while another kind's is taken", []string{watchVMs, watchNodes}, watchNodes, 1},
		{"after the view at every try (the state never still)", []string{watchVMs, watchNodes}, watchNodes, viewTries},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fb := newFakeBackend(t, true)
			vmFleet(t, fb, 1, viewTries) // room for every VM
			s := New(fakeConfig(fb, Config{}))
			h := newWatchHub(s.core, "")
			h.index = fb.fsm.Index()
			for _, k := range watchKinds {
				h.last[k] = h.view(k)
			}
			h.ready = true
			// A comparison that starts where the last one ended, as one
			// woken by a change the last one already took in does.
			h.refresh(tc.kinds)
			_, listed, _ := h.list(watchVMs, func(string) bool { return true })
			applied := 0
			h.viewing = func(kind string) {
				if kind == tc.applyAt && applied < tc.times {
					applyVMs(t, fb, 0, applied, 1)
					applied++
				}
			}
			h.refresh(tc.kinds) // the changes' comparison
			h.viewing = nil     // then a still state
			h.refresh(tc.kinds) // the next
			evs, _, _, err := h.since(watchVMs, listed, func(watchEvent) bool { return true })
			if err != nil || len(evs) != tc.times {
				t.Fatalf("after the version listed (%d): %d events %+v %v, want the %d VMs' ADDED", listed, len(evs), evs, err, tc.times)
			}
			for _, e := range evs {
				if e.Type != eventAdded || e.RV <= listed || e.RV > h.version() {
					t.Fatalf("event %s at version %d: want ADDED after %d, at most the hub's %d", e.Type, e.RV, listed, h.version())
				}
			}
		})
	}
}
