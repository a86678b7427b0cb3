package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"
	dto "github.com/prometheus/client_model/go"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/poll"
)

// batchPair is a follower (n1) that forwards the echo write to a leader
// (n2). The leader's echo answers who it ran for and the body; a body of
// "hold" waits until release is closed. User carol is known to both, bob
// to the follower only (the leader refuses his token).
func batchPair(t *testing.T) (follower *Server, addr1, addr2 string, held <-chan struct{}, release func(), ran *atomic.Int64) {
	t.Helper()
	b1, b2 := newFakeBackend(t, false), newFakeBackend(t, true)
	b2.name = "n2"
	for _, u := range []struct {
		name string
		on   []*fakeBackend
	}{{"carol", []*fakeBackend{b1, b2}}, {"bob", []*fakeBackend{b1}}} {
		for _, b := range u.on {
			if _, err := b.applyAny(context.Background(), raftfsm.TypeUserUpsert, raftfsm.UserUpsert{Name: u.name, Time: time.Unix(0, 0)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	heldc, released := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(released) }) }
	ran = &atomic.Int64{}
	serve := func(b *fakeBackend) (*Server, string) {
		s := New(fakeConfig(b, Config{}))
		s.handle(Route{Method: http.MethodPost, Path: "/api/v1/echo", Rule: RuleMember, Target: Leader, Write: true},
			func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
				ran.Add(1)
				body, _ := io.ReadAll(r.Body)
				if string(body) == "hold" {
					heldc <- struct{}{}
					<-released
				}
				writeJSON(w, http.StatusOK, api.Message{Message: fmt.Sprintf("%s:%s:%s:%s", b.Name(), principalOf(r.Context()).Name, body, clientIP(r))})
				return nil
			})
		addr, _ := serveOn(t, s)
		return s, addr
	}
	_, addr2 = serve(b2)
	t.Cleanup(release) // a failed test leaves no write held
	follower, addr1 = serve(b1)
	b1.peers = map[string]string{"n2": addr2}
	b1.leaderView = func() string { return "n2" }
	return follower, addr1, addr2, heldc, release, ran
}

// Writes that reach a follower while its batch to the leader is under way
// go together in the next; on the leader each is checked with its own token
// and answered on its own.
func TestForwardBatch_writes_that_arrive_together_go_together(t *testing.T) {
	follower, addr1, _, held, release, _ := batchPair(t)
	follower.fwd.batch.Hold = 0 // the held write keeps its batch under way
	hold := make(chan int, 1)
	go func() {
		code, _, _ := ask(t, http.MethodPost, "http://"+addr1+"/api/v1/echo", strings.NewReader("hold"), nil)
		hold <- code
	}()
	<-held
	type answer struct {
		code int
		msg  string
	}
	userToken := func(name string) string {
		u, ok := follower.replica.FSM().User(name)
		if !ok {
			t.Fatalf("no user %s", name)
		}
		tok, _, err := auth.Sign(testSeed, "c", auth.Principal{Kind: auth.KindUser, Name: name, Role: auth.RoleUser, UID: u.UID}, time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + tok
	}
	tokens := map[string]string{"a": "", "b": userToken("carol"), "c": "", "bob": userToken("bob")}
	answers := map[string]answer{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for body, tok := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := http.Header{}
			if tok != "" {
				h.Set("Authorization", tok)
			}
			code, msg, _ := ask(t, http.MethodPost, "http://"+addr1+"/api/v1/echo", strings.NewReader(body), h)
			mu.Lock()
			answers[body] = answer{code, msg}
			mu.Unlock()
		}()
	}
	poll.For(t, "four writes waiting for the batch under way", 10*time.Second, func() error {
		if n := follower.fwd.batch.Waiting(); n != 4 {
			return fmt.Errorf("%d waiting", n)
		}
		return nil
	})
	release()
	wg.Wait()
	if code := <-hold; code != http.StatusOK {
		t.Fatalf("the held write: %d", code)
	}
	for body, by := range map[string]string{"a": "root", "b": "carol", "c": "root"} {
		if a := answers[body]; a.code != http.StatusOK || a.msg != "n2:"+by+":"+body+":127.0.0.1" {
			t.Errorf("write %q: %d %q", body, a.code, a.msg)
		}
	}
	if a := answers["bob"]; a.code != http.StatusUnauthorized || !strings.Contains(a.msg, "bob") {
		t.Errorf("the write of a user the leader does not know: %d %q", a.code, a.msg)
	}
	var m dto.Metric
	if err := follower.metrics.batchSize.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n, sum := m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum(); n != 2 || sum != 5 {
		t.Fatalf("%d batches of %v writes in all, want 2 of 5 (the held one, then the four)", n, sum)
	}
}

// Only a peer may send a batch, and a batch carries only writes a peer
// forwarded: nothing of a refused batch runs.
func TestForwardBatch_refusals(t *testing.T) {
	_, _, addr2, _, _, ran := batchPair(t)
	item := func(forwardedBy string) string {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr2+"/api/v1/echo", strings.NewReader("x"))
		req.Header.Set("Authorization", "Bearer "+adminToken(t))
		if forwardedBy != "" {
			req.Header.Set(api.HeaderForwardedBy, forwardedBy)
		}
		var b bytes.Buffer
		_ = req.Write(&b)
		return b.String()
	}
	for _, tc := range []struct {
		name, peer, body string
		code             int
		answer           string
	}{
		{"not a peer", "", item("n1"), http.StatusForbidden, ""},
		{"a malformed batch", "n1", "junk\r\n\r\n", http.StatusBadRequest, ""},
		{"a write no peer forwarded", "n1", item(""), http.StatusOK, "HTTP/1.1 400 Bad Request"},
		{"a batch in a batch", "n1", strings.Replace(item("n1"), "/api/v1/echo", forwardBatchPath, 1), http.StatusOK, "HTTP/1.1 400 Bad Request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran.Store(0)
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr2+forwardBatchPath, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+adminToken(t))
			if tc.peer != "" {
				req.Header.Set(api.HeaderPlainPeer, tc.peer)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || !strings.HasPrefix(string(b), tc.answer) {
				t.Fatalf("%s: %.200q", resp.Status, b)
			}
			if n := ran.Load(); n != 0 {
				t.Fatalf("%d writes ran", n)
			}
		})
	}
}
