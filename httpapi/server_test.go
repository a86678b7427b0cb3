package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/scheduler"
)

// fakeBackend is a single replica that is either the leader or knows none.
type fakeBackend struct {
	images *imagestore.Store
	fsm    *raftfsm.FSM
	leader bool
	index  uint64
	// beforeApply, when set, runs before a command is applied (tests that
	// interleave requests hold it there).
	beforeApply func(raftfsm.Type)
	// peerAddr is the address IsPeer accepts (default 10.1.0.1, node n1's).
	peerAddr string
	// name is the node this backend runs as (default n1); peers maps other
	// peers' names to their API addresses.
	name  string
	peers map[string]string
	// leading, when set, says whether it leads now (instead of leader).
	leading func() bool
	// leaderView, when set on a follower, names the leader it knows.
	leaderView func() string
	// caughtUp, when set, is closed once the replica has caught up (nil:
	// caught up from the start).
	caughtUp chan struct{}
}

func newFakeBackend(t *testing.T, leader bool) *fakeBackend {
	images, err := imagestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBackend{fsm: raftfsm.NewFSM(nil), leader: leader, images: images}
	ctx := context.Background()
	for _, c := range []struct {
		t    raftfsm.Type
		body any
	}{
		{raftfsm.TypeInit, raftfsm.TestInit("c", time.Unix(0, 0))},
		{raftfsm.TypeUserUpsert, raftfsm.UserUpsert{Name: "root", Admin: true, Time: time.Unix(0, 0)}},
		{raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{Name: "n1", NodeFacts: raftfsm.NodeFacts{Addr: "10.1.0.1", Capacity: raftfsm.Capacity{CPU: 8, MemoryBytes: 128e9, GPU: 2}}, Phase: api.PhaseReady}},
	} {
		if _, err := b.applyAny(ctx, c.t, c.body); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func (b *fakeBackend) applyAny(_ context.Context, t raftfsm.Type, body any) (any, error) {
	data, err := raftfsm.Encode(t, body)
	if err != nil {
		return nil, err
	}
	b.index++
	r := b.fsm.Apply(&raft.Log{Index: b.index, Type: raft.LogCommand, Data: data}).(raftfsm.Result)
	return r.Value, r.Err
}

func (b *fakeBackend) Name() string {
	if b.name == "" {
		return "n1"
	}
	return b.name
}
func (b *fakeBackend) FSM() *raftfsm.FSM { return b.fsm }
func (b *fakeBackend) IsLeader() bool {
	if b.leading != nil {
		return b.leading()
	}
	return b.leader
}
func (b *fakeBackend) WaitLeader(context.Context) (string, string, error) {
	if b.IsLeader() {
		return b.Name(), "", nil
	}
	if b.leaderView != nil {
		name := b.leaderView()
		return name, b.peers[name], nil
	}
	return "", "", fmt.Errorf("%w: no leader known", raftfsm.ErrNotLeader)
}
func (b *fakeBackend) PeerAddr(name string) string { return b.peers[name] }
func (b *fakeBackend) PeerScheme() string          { return "http" }

// PeerTransport and PeerOf make the fake peers talk as a cluster running
// with peer.Config.PlainPeers does: the caller names itself in a header.
// (The real fabric, TLS with certificates, is tested in package peer.)
func (b *fakeBackend) PeerTransport() http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set(api.HeaderPlainPeer, b.Name())
		return http.DefaultTransport.RoundTrip(r)
	})
}

func (b *fakeBackend) PeerOf(r *http.Request) (string, bool) {
	name := r.Header.Get(api.HeaderPlainPeer)
	_, known := b.peers[name]
	return name, name != "" && (known || name == "n1" || name == "n2" || name == "n3")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// SigningKey and SealKey: the fake cluster's keys.
func (b *fakeBackend) SigningKey() []byte { return testSeed }
func (b *fakeBackend) SealKey() []byte    { return testSeed }
func (b *fakeBackend) Apply(ctx context.Context, t raftfsm.Type, body any) (any, error) {
	if !b.leader {
		return nil, raftfsm.ErrNotLeader
	}
	if b.beforeApply != nil {
		b.beforeApply(t)
	}
	return b.applyAny(ctx, t, body)
}
func (b *fakeBackend) Propose(ctx context.Context, t raftfsm.Type, body any) error {
	_, err := b.Apply(ctx, t, body)
	return err
}
func (b *fakeBackend) VerifyLeader(context.Context) error { return nil }
func (b *fakeBackend) CaughtUp() bool {
	if b.caughtUp == nil {
		return true
	}
	select {
	case <-b.caughtUp:
		return true
	default:
		return false
	}
}

func (b *fakeBackend) WaitCaughtUp(ctx context.Context) bool {
	if b.caughtUp == nil {
		return true
	}
	select {
	case <-b.caughtUp:
		return true
	case <-ctx.Done():
		return false
	}
}

// Place puts every VM on n1 at fixed ports.
func (b *fakeBackend) ResolveImage(context.Context, string, string, string) (raftfsm.Image, error) {
	return raftfsm.Image{}, errors.New("no registries in this test")
}

func (b *fakeBackend) RemoteImages(context.Context, string) ([]api.RemoteImage, error) {
	return nil, errors.New("no registries in this test")
}

func (b *fakeBackend) PullRemote(context.Context, string, string, string, string, string) (raftfsm.Job, error) {
	return raftfsm.Job{}, errors.New("no registries in this test")
}

func (b *fakeBackend) CreateJob(ctx context.Context, j raftfsm.Job) (raftfsm.Job, error) {
	j.Name, j.Node = j.Type+"-fake1", "n1"
	v, err := b.Apply(ctx, raftfsm.TypeJobCreate, raftfsm.JobCreate{Job: j})
	if err != nil {
		return raftfsm.Job{}, err
	}
	return *v.(*raftfsm.Job), nil
}

func (b *fakeBackend) Place(ctx context.Context, p scheduler.Placement) (raftfsm.VM, error) {
	vm := p.VM
	if p.NamePrefix != "" {
		vm.Name = p.NamePrefix + "-fake1"
	}
	vm.Node, vm.IP, vm.VNCPort, vm.SSHPort, vm.ScreensharePort = "n1", "10.1.0.1", 5900, 20000, 20001
	v, err := b.Apply(ctx, raftfsm.TypeVMCreate, raftfsm.VMCreate{VM: vm})
	if err != nil {
		return vm, err
	}
	return *v.(*raftfsm.VM), nil
}
func (b *fakeBackend) WaitPeersApplied(context.Context, uint64) []string { return nil }

func (b *fakeBackend) IsPeer(ip string) bool                        { return ip == b.peerAddr || ip == "10.1.0.1" }
func (b *fakeBackend) SyncReplica(context.Context) error            { return nil }
func (b *fakeBackend) AppliedIndex(context.Context) (uint64, error) { return b.fsm.Index(), nil }
func (b *fakeBackend) ClusterInfo(context.Context) api.ClusterInfo {
	return api.ClusterInfo{Leader: "n1", Peers: []api.ClusterPeer{{Name: "n1", Raft: api.RaftLeader}}}
}

var testSeed = make([]byte, 32)

// rootUID is the UID of the admin "root": the index of the second command
// newFakeBackend applies.
const rootUID = 2

// adminToken signs a token of the fake backend's admin.
func adminToken(t testing.TB) string {
	tok, _, err := auth.Sign(testSeed, "c", auth.Principal{Kind: auth.KindUser, Name: "root", Role: auth.RoleAdmin, UID: rootUID}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// do sends a request as the admin.
func do(t *testing.T, h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	return doAs(t, h, adminToken(t), method, path, body)
}

// doAs sends a request with a bearer token ("" for none).
func doAs(t testing.TB, h http.Handler, token, method, path, body string) *httptest.ResponseRecorder {
	return doAsPeer(t, h, token, "", method, path, body)
}

// doAsPeer sends a request with a bearer token ("" for none) as peer (""
// for a client) over the fake's fabric.
func doAsPeer(t testing.TB, h http.Handler, token, peer, method, path, body string) *httptest.ResponseRecorder {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if peer != "" {
		req.Header.Set(api.HeaderPlainPeer, peer)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestServer_answers(t *testing.T) {
	tagPath := "/api/v1/namespaces/svc-default/nodes/n1/tag"
	cases := []struct {
		name        string
		method      string
		path        string
		body        string
		wantCode    int
		wantReason  string
		wantInBody  string
		wantWarning string
	}{
		{name: "list nodes", method: "GET", path: "/api/v1/namespaces/svc-default/nodes", wantCode: 200, wantInBody: `"availableMemory":"128.00G"`},
		{name: "empty tags are an array", method: "GET", path: "/api/v1/namespaces/svc-default/nodes", wantCode: 200, wantInBody: `"svcTags":[]`},
		{name: "unknown namespace", method: "GET", path: "/api/v1/namespaces/nope/nodes", wantCode: 404, wantReason: api.ReasonNotFound, wantInBody: `namespace \"nope\" not found`},
		{name: "tag", method: "POST", path: tagPath, body: `{"tag":"ssd"}`, wantCode: 200, wantInBody: `"svcTags":["ssd"]`},
		{name: "tag with extra field warns", method: "POST", path: tagPath, body: `{"tag":"ssd","shouldGenerateName":true}`, wantCode: 200, wantWarning: "shouldGenerateName"},
		{name: "tag wrong type", method: "POST", path: tagPath, body: `{"tag":5}`, wantCode: 400, wantReason: api.ReasonBadRequest, wantInBody: `field \"tag\" must be a string`},
		{name: "tag malformed", method: "POST", path: tagPath, body: `{"tag":`, wantCode: 400, wantReason: api.ReasonBadRequest},
		{name: "tag no body", method: "POST", path: tagPath, wantCode: 400, wantInBody: "JSON object"},
		{name: "tag array body", method: "POST", path: tagPath, body: `["ssd"]`, wantCode: 400, wantInBody: "JSON object"},
		{name: "tag missing", method: "POST", path: tagPath, body: `{}`, wantCode: 400, wantInBody: `field \"tag\": tag must not be empty`},
		{name: "tag bad characters", method: "POST", path: tagPath, body: `{"tag":"a b"}`, wantCode: 400},
		{name: "tag too long", method: "POST", path: tagPath, body: `{"tag":"` + strings.Repeat("a", 64) + `"}`, wantCode: 400, wantInBody: "longer than 63"},
		{name: "tag too big a body", method: "POST", path: tagPath, body: `{"tag":"` + strings.Repeat("a", 2<<20) + `"}`, wantCode: 413, wantReason: api.ReasonRequestEntityTooLarge},
		{name: "tag unknown node", method: "POST", path: "/api/v1/namespaces/svc-default/nodes/n9/tag", body: `{"tag":"x"}`, wantCode: 404, wantInBody: `node \"n9\" not found`},
		{name: "untag", method: "POST", path: "/api/v1/namespaces/svc-default/nodes/n1/untag", body: `{"tag":"ssd"}`, wantCode: 200},
		{name: "unknown route", method: "GET", path: "/api/v1/nothing", wantCode: 404, wantReason: api.ReasonNotFound},
		{name: "trailing slash is the same path", method: "GET", path: "/api/v1/namespaces/svc-default/nodes/", wantCode: 200, wantInBody: `"items"`},
		{name: "trailing slash on a write", method: "POST", path: tagPath + "/", body: `{"tag":"ssd"}`, wantCode: 200},
		{name: "other case is no route, in JSON", method: "GET", path: "/API/V1/namespaces/svc-default/nodes", wantCode: 404, wantReason: api.ReasonNotFound},
		{name: "wrong method", method: "DELETE", path: "/api/v1/namespaces/svc-default/nodes", wantCode: 405},
		{name: "cluster info", method: "GET", path: "/api/v1/cluster-info", wantCode: 200, wantInBody: `"raft":"leader"`},
		{name: "metrics", method: "GET", path: "/metrics", wantCode: 200, wantInBody: "svc_http_requests_total"},
	}
	s := New(fakeConfig(newFakeBackend(t, true), Config{}))
	h := s.Handler()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := do(t, h, c.method, c.path, c.body)
			if w.Code != c.wantCode {
				t.Fatalf("code %d, want %d: %s", w.Code, c.wantCode, w.Body)
			}
			if ct := w.Header().Get("Content-Type"); c.path != "/metrics" && ct != "application/json" {
				t.Fatalf("content type %q", ct)
			}
			if c.wantCode >= 400 {
				var st api.Status
				if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || st.Kind != "Status" || st.Code != c.wantCode || st.Message == "" {
					t.Fatalf("error body %s (%v)", w.Body, err)
				}
				if c.wantReason != "" && st.Reason != c.wantReason {
					t.Fatalf("reason %q, want %q", st.Reason, c.wantReason)
				}
			}
			if !strings.Contains(w.Body.String(), c.wantInBody) {
				t.Fatalf("body %s lacks %s", w.Body, c.wantInBody)
			}
			if c.wantWarning != "" && !strings.Contains(w.Header().Get("Warning"), c.wantWarning) {
				t.Fatalf("Warning %q lacks %s", w.Header().Get("Warning"), c.wantWarning)
			}
		})
	}
}

func TestServer_no_leader_is_503_after_a_bounded_wait(t *testing.T) {
	s := New(fakeConfig(newFakeBackend(t, false), Config{LeaderWait: 150 * time.Millisecond}))
	start := time.Now()
	w := do(t, s.Handler(), "POST", "/api/v1/namespaces/svc-default/nodes/n1/tag", `{"tag":"x"}`)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "no leader") {
		t.Fatalf("code %d, Retry-After %q, body %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("waited %s", waited)
	}
	// Reads are served from the local replica without a leader.
	if w := do(t, s.Handler(), "GET", "/api/v1/namespaces/svc-default/nodes", ""); w.Code != 200 {
		t.Fatalf("read without leader: %d", w.Code)
	}
	// A consistent read needs the leader.
	if w := do(t, s.Handler(), "GET", "/api/v1/namespaces/svc-default/nodes?consistent=true", ""); w.Code != 503 {
		t.Fatalf("consistent read without leader: %d", w.Code)
	}
}

// Reads never change the state, and every write runs on the leader except the
// image upload, which stays on the peer that receives the bytes, and a
// deploy, whose wait does. The only
// reads that leave the peer are websockets into a VM, on its host, and a
// snapshot, taken on the leader (?stale=true: here).
func TestServer_route_flags(t *testing.T) {
	s := New(fakeConfig(newFakeBackend(t, true), Config{}))
	local := map[string]bool{
		"POST /api/v1/namespaces/:namespace/upload/image": true,
		"POST /api/v1/namespaces/:namespace/upload/iso":   true,
		"POST /api/v1/namespaces/:namespace/images":       true, // generate
		// A follower refuses it (503, not leader): never forwarded.
		"POST /api/v1/internal/apply": true,
		// A follower has the leader place it and waits on its own replica.
		"POST /api/v1/namespaces/:namespace/vms": true,
	}
	for _, r := range s.Routes() {
		id := r.Method + " " + r.Path
		if r.Method == http.MethodGet && (r.Write || (r.Target != Here && !(r.Stream && r.Target == VMHost) && !(r.Stale && r.Target == Leader))) {
			t.Errorf("%s: a read marked as a write", id)
		}
		if r.Write && r.Target != Leader && !local[id] {
			t.Errorf("%s: a write that would run on a follower", id)
		}
	}
}

// No page of the API may be framed by another site, whichever page it is.
func TestPages_refuse_framing(t *testing.T) {
	h := New(fakeConfig(newFakeBackend(t, true), Config{})).Handler()
	for _, path := range []string{"/api/v1/swagger", "/api/v1/swagger/init.js", "/ui/", "/ui/app.js", "/ui/vms"} {
		t.Run(path, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
			if w.Code != http.StatusOK || w.Header().Get("X-Frame-Options") != "DENY" ||
				!strings.Contains(w.Header().Get("Content-Security-Policy"), FrameRule) {
				t.Fatalf("%d, headers %v", w.Code, w.Header())
			}
		})
	}
}

// fakeConfig returns cfg served by b in every role.
func fakeConfig(b *fakeBackend, cfg Config) Config {
	cfg.Replica, cfg.Consensus, cfg.Propagation, cfg.Readiness, cfg.Peers, cfg.Links, cfg.Keys = b, b, b, b, b, b, b
	cfg.Placer, cfg.Jobs, cfg.Registries, cfg.Images = b, b, b, b.images
	return cfg
}
