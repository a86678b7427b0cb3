package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
)

// electionTrio is three peers: n1 forwards writes to whom it takes for the
// leader (view), n2 has just stopped leading (and leads again when n2Leads
// says so), n3 leads. Each serves a write route that runs on the leader and
// echoes who ran it and the body.
func electionTrio(t *testing.T, view func() string, n2Leads func() bool) string {
	t.Helper()
	b1, b2, b3 := newFakeBackend(t, false), newFakeBackend(t, false), newFakeBackend(t, true)
	b2.name, b3.name = "n2", "n3"
	b2.leading = n2Leads
	serve := func(b *fakeBackend) string {
		s := New(fakeConfig(b, Config{LeaderWait: 300 * time.Millisecond}))
		s.handle(Route{Method: http.MethodPost, Path: "/api/v1/echo", Rule: RuleMember, Target: Leader, Write: true},
			func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
				body, _ := io.ReadAll(r.Body)
				writeJSON(w, http.StatusOK, api.Message{Message: b.Name() + ":" + string(body)})
				return nil
			})
		addr, _ := serveOn(t, s)
		return addr
	}
	addr1 := serve(b1)
	b1.peers = map[string]string{"n2": serve(b2), "n3": serve(b3)}
	b1.leaderView = view
	return addr1
}

// A write forwarded to a peer that has just stopped leading is refused
// there unrun and sent by the forwarding peer to the new leader, body and
// all (of known length or not), or to the same peer again once it has won
// the election; with no leader to take it in time, the caller gets the
// refusal (503, Retry-After).
func TestForward_write_refused_by_a_former_leader(t *testing.T) {
	for _, tc := range []struct {
		name    string
		view    func(calls int64) string
		n2Leads func(asked int64) bool
		chunked bool
		code    int
		by      string
	}{
		{"the new leader known a moment later", func(n int64) string { return map[bool]string{true: "n2", false: "n3"}[n < 3] }, nil, false, 200, "n3:hello"},
		{"no new leader in time", func(int64) string { return "n2" }, nil, false, 503, ""},
		{"a body of unknown length (held whole too)", func(n int64) string { return map[bool]string{true: "n2", false: "n3"}[n < 2] }, nil, true, 200, "n3:hello"},
		{"the former leader wins again", func(int64) string { return "n2" }, func(asked int64) bool { return asked > 1 }, false, 200, "n2:hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls, asked atomic.Int64
			n2Leads := func() bool { return false }
			if tc.n2Leads != nil {
				n2Leads = func() bool { return tc.n2Leads(asked.Add(1)) }
			}
			addr := electionTrio(t, func() string { return tc.view(calls.Add(1)) }, n2Leads)
			var body io.Reader = strings.NewReader("hello")
			if tc.chunked {
				body = io.NopCloser(body) // no length: sent chunked
			}
			code, msg, h := ask(t, http.MethodPost, "http://"+addr+"/api/v1/echo", body, nil)
			if code != tc.code || tc.code == 200 && msg != tc.by {
				t.Fatalf("answered %d %q, want %d %q", code, msg, tc.code, tc.by)
			}
			if tc.code == 503 && (h.Get("Retry-After") == "" || !strings.Contains(msg, "no longer the leader")) {
				t.Fatalf("the refusal: %q (Retry-After %q)", msg, h.Get("Retry-After"))
			}
			if h.Get(api.HeaderNotLeader) != "" {
				t.Fatal("the peers' own header reached the caller")
			}
		})
	}
}

// A write whose body is too slow or too large is refused alike by the
// leader and through a follower, which refuses it itself before forwarding.
func TestForward_body_refusals_alike_on_every_peer(t *testing.T) {
	limits := Limits{BodyTimeout: 300 * time.Millisecond}
	serve := func(b *fakeBackend) string {
		s := New(fakeConfig(b, Config{Limits: limits}))
		s.handle(Route{Method: http.MethodPost, Path: "/api/v1/echo", Rule: RuleMember, Target: Leader, Write: true},
			func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
				var v struct{}
				if err := decodeJSON(w, r, &v); err != nil {
					return err
				}
				writeJSON(w, http.StatusOK, api.Message{Message: b.Name()})
				return nil
			})
		addr, _ := serveOn(t, s)
		return addr
	}
	leader, follower := newFakeBackend(t, true), newFakeBackend(t, false)
	leader.name = "n2"
	follower.peers = map[string]string{"n2": serve(leader)}
	follower.leaderView = func() string { return "n2" }
	peers := map[string]string{"leader": follower.peers["n2"], "follower": serve(follower)}
	for name, addr := range peers {
		t.Run(name+": a slow body", func(t *testing.T) {
			conn := dialRaw(t, addr)
			_, _ = io.WriteString(conn, "POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+adminToken(t)+
				"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":")
			resp, b, err := conn.response(5 * time.Second)
			var st api.Status
			if err != nil || resp.StatusCode != http.StatusRequestTimeout || json.Unmarshal(b, &st) != nil || st.Reason != api.ReasonTimeout {
				t.Fatalf("%v %v %s", resp, err, b)
			}
		})
		t.Run(name+": a body over 1 MiB", func(t *testing.T) {
			code, _, _ := ask(t, http.MethodPost, "http://"+addr+"/api/v1/echo", strings.NewReader(`{"a":"`+strings.Repeat("x", 2<<20)+`"}`), nil)
			if code != http.StatusRequestEntityTooLarge {
				t.Fatalf("answered %d", code)
			}
		})
	}
}
