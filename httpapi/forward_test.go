package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// hostPair is two peers, n1 and n2, with a VM "vm1" on n2 in both replicas,
// each serving a route that runs on the VM's host and says who answered.
func hostPair(t *testing.T) (b1, b2 *fakeBackend, addr1, addr2 string, stop2 func()) {
	t.Helper()
	b1, b2 = newFakeBackend(t, true), newFakeBackend(t, false)
	b2.name = "n2"
	for _, b := range []*fakeBackend{b1, b2} {
		for _, c := range []struct {
			t    raftfsm.Type
			body any
		}{
			{raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{Name: "n2", NodeFacts: raftfsm.NodeFacts{Addr: "10.1.0.2", Capacity: raftfsm.Capacity{CPU: 8, MemoryBytes: 64e9}}, Phase: api.PhaseReady}},
			{raftfsm.TypeImageCreate, raftfsm.ImageCreate{Image: raftfsm.Image{Name: "img", Namespace: api.DefaultNamespace, Digest: "sha256:aa", Format: "qcow2"}, Holder: "n2"}},
			{raftfsm.TypeVMCreate, raftfsm.VMCreate{VM: raftfsm.VM{Name: "vm1", Namespace: api.DefaultNamespace, Node: "n2", Image: "img", ImageDigest: "sha256:aa",
				VMOptions: raftfsm.VMOptions{CPU: 1, MemoryBytes: 1 << 30}, SSHPort: 20000, VNCPort: 5900, ScreensharePort: 20001}}},
		} {
			if _, err := b.applyAny(context.Background(), c.t, c.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	serve := func(b *fakeBackend) (string, func()) {
		s := New(fakeConfig(b, Config{}))
		s.handle(Route{Method: http.MethodGet, Path: "/api/v1/namespaces/:namespace/vms/:vm/where", Rule: RuleMember, Target: VMHost},
			func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
				writeJSON(w, http.StatusOK, api.Message{Message: b.Name()})
				return nil
			})
		return serveOn(t, s)
	}
	addr1, _ = serve(b1)
	addr2, stop2 = serve(b2)
	b1.peers = map[string]string{"n2": addr2}
	return b1, b2, addr1, addr2, stop2
}

// ask sends an admin's request to a peer and returns the answer's code,
// Status or Message text and headers; one that got no answer is an error
// of the test and code 0.
func ask(t *testing.T, method, url string, body io.Reader, header http.Header) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, url, body)
	req.Header.Set("Authorization", "Bearer "+adminToken(t))
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		// not Fatal: tests ask from goroutines they wait on, where Fatal
		// would end the goroutine without its answer
		t.Errorf("%s %s: %v", method, url, err)
		return 0, "", nil
	}
	defer resp.Body.Close()
	var m api.Message
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m.Message, resp.Header
}

func where(t *testing.T, addr string, header http.Header) (int, string, http.Header) {
	t.Helper()
	return ask(t, http.MethodGet, "http://"+addr+"/api/v1/namespaces/svc-default/vms/vm1/where", nil, header)
}

// A request for a VM hosted on peer n2 that reaches peer n1 is answered by
// n2; a forwarded request is never forwarded again; a host that is down or
// NOT READY is a 503 with Retry-After.
func TestForward_to_the_vms_host(t *testing.T) {
	b1, _, addr1, addr2, stop2 := hostPair(t)
	if code, by, _ := where(t, addr1, nil); code != 200 || by != "n2" {
		t.Fatalf("through n1: %d answered by %q", code, by)
	}
	if code, by, _ := where(t, addr2, nil); code != 200 || by != "n2" {
		t.Fatalf("at the host: %d answered by %q", code, by)
	}
	// n1 got this from a peer that thought n1 hosts the VM: not again.
	hdr := http.Header{api.HeaderForwardedBy: {"n3"}, api.HeaderPlainPeer: {"n3"}}
	if code, _, h := where(t, addr1, hdr); code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Fatalf("a forwarded request forwarded again? %d", code)
	}
	// The host NOT READY in n1's replica: 503 at once.
	if _, err := b1.applyAny(context.Background(), raftfsm.TypeNodeSetPhase, raftfsm.NodeSetPhase{Name: "n2", Phase: api.PhaseNotReady}); err != nil {
		t.Fatal(err)
	}
	if code, _, h := where(t, addr1, nil); code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Fatalf("host NOT READY: %d", code)
	}
	if _, err := b1.applyAny(context.Background(), raftfsm.TypeNodeSetPhase, raftfsm.NodeSetPhase{Name: "n2", Phase: api.PhaseReady}); err != nil {
		t.Fatal(err)
	}
	// The host down: 503 with Retry-After, as a Status.
	stop2()
	if code, _, h := where(t, addr1, nil); code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Fatalf("host down: %d", code)
	}
}

// A peer's proposal that reaches a peer no longer leading is refused unrun
// (503, HeaderNotLeader), never forwarded: the leader would take the
// forwarding peer for the proposer.
func TestInternalApply_not_forwarded_by_a_follower(t *testing.T) {
	_, b2, _, addr2, _ := hostPair(t)
	forwarded := 0
	b2.leaderView = func() string { forwarded++; return "n1" }
	body := `{"type":11,"body":{"namespace":"svc-default","name":"vm1","node":"n2","status":"Running"}}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr2+"/api/v1/internal/apply", strings.NewReader(body))
	req.Header.Set(api.HeaderPlainPeer, "n2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(api.HeaderNotLeader) == "" || forwarded != 0 {
		t.Fatalf("answer %d (not-leader %q), forwarded %d times", resp.StatusCode, resp.Header.Get(api.HeaderNotLeader), forwarded)
	}
}

// A peer's own call to a peer write route (the users root names on a
// host) is answered with the leader's applied index, as a forwarded write
// is: the calling peer waits for its replica to have the write before it
// answers root (the removed user's tokens refused there too).
func TestHostUser_answer_carries_the_applied_index(t *testing.T) {
	b := newFakeBackend(t, true)
	addr, _ := serveOn(t, New(fakeConfig(b, Config{})))
	for _, body := range []string{`{"user":"alice@example.com"}`, `{"user":"alice@example.com","remove":true}`} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+api.HostUserPath, strings.NewReader(body))
		req.Header.Set(api.HeaderPlainPeer, "n2")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := strconv.FormatUint(b.fsm.Index(), 10)
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get(api.HeaderIndex) != want {
			t.Fatalf("%s: %d with applied index %q, want %s", body, resp.StatusCode, resp.Header.Get(api.HeaderIndex), want)
		}
	}
}
