package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// BenchmarkKube_door_vs_api measures, in the same run on the same state,
// a list of 10,000 VMs through /api/v1 and through the Kubernetes-style
// door (virtualmachineinstances), whole requests over HTTP, and watches of
// 1,000 changes (VM creates) through each: live (both watches open while
// the changes are applied, to each one's last event), and replayed
// (resumed from the version before changes applied earlier, until the
// last event: the door's first replay converts each event, its later ones
// find them converted). Goal: the door within ×1.2 of /api/v1.
func BenchmarkKube_door_vs_api(b *testing.B) {
	const vms, perNode, changes = 10000, 1000, 1000
	t := &testing.T{}
	fb := newFakeBackend(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	vmFleet(b, fb, vms/perNode+1, perNode) // the last node for the watched creates
	for n := range vms / perNode {
		applyVMs(b, fb, n, 0, perNode)
	}
	s := New(fakeConfig(fb, Config{}))
	go s.RunWatches(ctx, "")
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	tok := adminToken(b)
	get := func(path string) *http.Response {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			b.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		return resp
	}
	const apiVMs = "/api/v1/namespaces/svc-default/vms"
	const doorVMs = "/apis/orka.macstadium.com/v1/namespaces/svc-default/virtualmachineinstances"
	for deadline := time.Now().Add(time.Minute); ; { // the hub's first view
		resp := get(apiVMs + "?watch=true&timeoutSeconds=1")
		first, _ := bufio.NewReader(resp.Body).ReadString('\n')
		resp.Body.Close()
		if strings.Contains(first, "ADDED") || time.Now().After(deadline) {
			break
		}
	}
	list := func(path string) time.Duration {
		start := time.Now()
		resp := get(path)
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n < vms*100 {
			b.Fatalf("%s: %d bytes, %v", path, n, err)
		}
		return time.Since(start)
	}
	caughtUp := func() {
		for deadline := time.Now().Add(time.Minute); ; {
			h := s.watchHub()
			h.mu.Lock()
			caught := h.index >= fb.fsm.Index()
			h.mu.Unlock()
			if caught {
				return
			}
			if time.Now().After(deadline) {
				b.Fatal("the watch hub did not catch up with the changes in a minute")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// added reads a watch until changes ADDED events came.
	added := func(path string, resp *http.Response) error {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		n := 0
		for n < changes && sc.Scan() {
			if strings.Contains(sc.Text(), `"type":"ADDED"`) {
				n++
			}
		}
		if n < changes {
			return fmt.Errorf("%s: %d of %d changes, %v", path, n, changes, sc.Err())
		}
		return nil
	}
	watchFrom := func(path string, rv uint64) *http.Response {
		return get(fmt.Sprintf("%s?watch=true&timeoutSeconds=60&resourceVersion=%d", path, rv))
	}
	// The replayed changes, applied once: every replay resumes from before
	// them, once the hub has them all.
	from := fb.fsm.Index()
	applyVMs(b, fb, vms/perNode, 0, changes)
	caughtUp()
	watch := func(path string) time.Duration {
		start := time.Now()
		if err := added(path, watchFrom(path, from)); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	// live watches both watches open while the changes are applied (on a
	// node of their own), as watches follow a cluster: each one's time from
	// the first change to its last event.
	live := func(node int) (viaAPI, viaDoor time.Duration) {
		if _, err := fb.applyAny(ctx, raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{Name: fmt.Sprintf("b%d", node), NodeFacts: raftfsm.NodeFacts{Addr: fmt.Sprintf("10.3.%d.1", node%250),
			Capacity: raftfsm.Capacity{CPU: 4 * changes, MemoryBytes: changes << 31}}, Phase: api.PhaseReady}); err != nil {
			b.Fatal(err)
		}
		caughtUp()
		at := fb.fsm.Index()
		type done struct {
			path string
			end  time.Time
			err  error
		}
		dones := make(chan done, 2)
		for _, path := range []string{apiVMs, doorVMs} {
			resp := watchFrom(path, at)
			go func() {
				err := added(path, resp)
				dones <- done{path, time.Now(), err}
			}()
		}
		start := time.Now()
		applyVMs(b, fb, node, 0, changes)
		for range 2 {
			d := <-dones
			if d.err != nil {
				b.Fatal(d.err)
			}
			if d.path == apiVMs {
				viaAPI = d.end.Sub(start)
			} else {
				viaDoor = d.end.Sub(start)
			}
		}
		return viaAPI, viaDoor
	}
	// The door converts an event once for every watcher that meets it: the
	// first watch of the changes converts them, later ones (the run's
	// other iterations) find them converted.
	var apiList, doorList, apiWatch, doorFirst, doorLater, apiLive, doorLive time.Duration
	b.ResetTimer()
	for i := range b.N {
		apiList += list(apiVMs)
		doorList += list(doorVMs)
		apiWatch += watch(apiVMs)
		if d := watch(doorVMs); i == 0 {
			doorFirst = d
		} else {
			doorLater += d
		}
		a, d := live(vms/perNode + 1 + i)
		apiLive, doorLive = apiLive+a, doorLive+d
	}
	b.StopTimer()
	n := float64(b.N)
	ms := func(d time.Duration, n float64) float64 { return float64(d.Microseconds()) / n / 1000 }
	b.ReportMetric(ms(apiList, n), "api-list-ms")
	b.ReportMetric(ms(doorList, n), "door-list-ms")
	b.ReportMetric(float64(doorList)/float64(apiList), "door/api-list")
	b.ReportMetric(ms(apiWatch, n), "api-watch-ms")
	b.ReportMetric(ms(doorFirst, 1), "door-watch-first-ms")
	b.ReportMetric(ms(doorFirst, 1)/ms(apiWatch, n), "door-first/api-watch")
	b.ReportMetric(ms(apiLive, n), "api-live-ms")
	b.ReportMetric(ms(doorLive, n), "door-live-ms")
	b.ReportMetric(float64(doorLive)/float64(apiLive), "door/api-live")
	if b.N > 1 {
		b.ReportMetric(ms(doorLater, n-1), "door-watch-later-ms")
		b.ReportMetric(ms(doorLater, n-1)/ms(apiWatch, n), "door-later/api-watch")
	}
	b.ReportMetric(0, "ns/op")
}

// vmFleet records an image and nodes b0...b{nodes-1} with room for perNode
// VMs each.
func vmFleet(tb testing.TB, fb *fakeBackend, nodes, perNode int) {
	tb.Helper()
	ctx := context.Background()
	if _, err := fb.applyAny(ctx, raftfsm.TypeImageCreate, raftfsm.ImageCreate{Image: raftfsm.Image{Name: "img", Namespace: api.DefaultNamespace, Digest: "sha256:aa", Format: "qcow2"}, Holder: "n1"}); err != nil {
		tb.Fatal(err)
	}
	for n := range nodes {
		if _, err := fb.applyAny(ctx, raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{Name: fmt.Sprintf("b%d", n), NodeFacts: raftfsm.NodeFacts{Addr: fmt.Sprintf("10.2.0.%d", n+1),
			Capacity: raftfsm.Capacity{CPU: 4 * perNode, MemoryBytes: int64(perNode) << 31}}, Phase: api.PhaseReady}); err != nil {
			tb.Fatal(err)
		}
	}
}

// applyVMs records VMs vm-{node}-{from}... (count of them) on node b{node}.
// Errors are reported with Error: it may run beside the test's goroutine.
func applyVMs(tb testing.TB, fb *fakeBackend, node, from, count int) {
	for j := from; j < from+count; j++ {
		if _, err := fb.applyAny(context.Background(), raftfsm.TypeVMCreate, raftfsm.VMCreate{VM: raftfsm.VM{Name: fmt.Sprintf("vm-%d-%d", node, j), Namespace: api.DefaultNamespace,
			Node: fmt.Sprintf("b%d", node), Image: "img", ImageDigest: "sha256:aa",
			VMOptions: raftfsm.VMOptions{CPU: 1, MemoryBytes: 1 << 30}, SSHPort: 20000 + 2*j, ScreensharePort: 20001 + 2*j, VNCPort: 5900 + j}}); err != nil {
			tb.Error(err)
			return
		}
	}
}
