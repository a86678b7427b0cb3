package hostadmin

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/fsmtest"
)

type keys struct{ seed []byte }

func (k keys) SigningKey() []byte { return k.seed }
func (k keys) SealKey() []byte    { return make([]byte, 32) }

// newUsers is a host's user administration over a one-peer state, its
// socket served in a fresh data dir.
func newUsers(t *testing.T) (*Users, *fsmtest.Applier, *http.Client, string) {
	t.Helper()
	a := fsmtest.New()
	a.Must(t, raftfsm.TypeInit, raftfsm.TestInit("c1", time.Now().UTC().Truncate(time.Second)))
	seed := bytes.Repeat([]byte{7}, ed25519.SeedSize)
	dir := t.TempDir()
	u := New(Config{
		DataDir: dir, FSM: a.FSM, SigningKey: func() []byte { return seed },
		Apply: func(ctx context.Context, req api.HostUserRequest) error {
			if req.Remove {
				_, err := a.Apply(ctx, raftfsm.TypeUserRemove, raftfsm.UserRemove{Name: req.User})
				return err
			}
			_, err := a.Apply(ctx, raftfsm.TypeUserUpsert, raftfsm.UserUpsert{Name: req.User, Admin: req.Admin, Time: time.Now().UTC().Truncate(time.Second)})
			return err
		},
		WaitPeersApplied: func(context.Context, uint64) []string { return nil },
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if err := u.Serve(ctx, &wg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	sock := filepath.Join(dir, AdminSocket)
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	return u, a, cl, sock
}

func post(t *testing.T, cl *http.Client, path string, body any) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := cl.Post("http://admin"+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func TestSocket_cases(t *testing.T) {
	_, a, cl, sock := newUsers(t)
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v mode %v", err, fi.Mode())
	}
	authn := auth.NewAuthenticator(a.FSM, keys{seed: bytes.Repeat([]byte{7}, ed25519.SeedSize)})
	cases := []struct {
		name     string
		path     string
		body     any
		code     int
		say      string
		wantRole string
	}{
		{"a user's token", "/token", AdminTokenRequest{User: "alice"}, http.StatusOK, "", auth.RoleUser},
		{"an admin's token", "/token", AdminTokenRequest{User: "root-ops", Admin: true, TTL: "2h"}, http.StatusOK, "", auth.RoleAdmin},
		{"a bad user name", "/token", AdminTokenRequest{User: "Bad Name"}, http.StatusBadRequest, "--user", ""},
		{"a ttl under a minute", "/token", AdminTokenRequest{User: "alice", TTL: "5s"}, http.StatusBadRequest, "at least 1m", ""},
		{"not JSON", "/token", "[", http.StatusBadRequest, "malformed", ""},
		{"remove a user", "/users/remove", AdminUserRequest{User: "alice"}, http.StatusOK, "every peer refuses its tokens", ""},
		{"remove nobody", "/users/remove", AdminUserRequest{}, http.StatusBadRequest, "name a user", ""},
		{"remove an unknown user", "/users/remove", AdminUserRequest{User: "ghost"}, http.StatusNotFound, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := post(t, cl, c.path, c.body)
			if code != c.code || !strings.Contains(string(out), c.say) {
				t.Fatalf("%d %s", code, out)
			}
			if c.wantRole == "" {
				return
			}
			var tok api.TokenResponse
			if err := json.Unmarshal(out, &tok); err != nil {
				t.Fatal(err)
			}
			p, err := authn.Authenticate("Bearer "+tok.Token, time.Now())
			if err != nil || p.Role != c.wantRole {
				t.Fatalf("token %+v: %v", p, err)
			}
		})
	}
	if _, ok := a.FSM.User("alice"); ok {
		t.Fatal("alice is still a user")
	}
}

func TestUsers_WriteBootstrapToken(t *testing.T) {
	u, a, _, _ := newUsers(t)
	if err := u.WriteBootstrapToken(context.Background()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(u.cfg.DataDir, AdminTokenFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v mode %v", path, err, fi.Mode())
	}
	b, _ := os.ReadFile(path)
	authn := auth.NewAuthenticator(a.FSM, keys{seed: bytes.Repeat([]byte{7}, ed25519.SeedSize)})
	p, err := authn.Authenticate("Bearer "+strings.TrimSpace(string(b)), time.Now())
	if err != nil || p.Role != auth.RoleAdmin || p.Name != "admin" {
		t.Fatalf("the bootstrap token: %+v %v", p, err)
	}
}
