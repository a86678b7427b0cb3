package membership

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/node/fabric"
)

// TestForm_makes_an_identity_and_a_wrapped_init: a formed cluster's keys
// are in the Init only wrapped under the secret, which is in the data dir
// alone (0600), and the Init goes once the state has it (PendingInit).
func TestForm_makes_an_identity_and_a_wrapped_init(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fabric")
	id, err := Form(dir, Host{Name: "p1", Addr: "10.0.0.1", RaftAddr: "10.0.0.1:7000"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := fabric.LoadIdentity(dir)
	if err != nil || loaded.KeyID() != id.KeyID() {
		t.Fatalf("load: %v", err)
	}
	for _, f := range []string{"cluster.secret", "node-key.pem", "gossip-keys.json", "init.json", "trust.json"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, st, err)
		}
	}
	init, ok := PendingInit(dir)
	if !ok || init.First.Name != "p1" || init.First.KeyID != id.KeyID() || init.ClusterID != id.ClusterID {
		t.Fatalf("init %+v", init)
	}
	aad := []byte(id.ClusterID)
	for _, w := range []struct {
		purpose string
		b       []byte
		size    int
	}{{fabric.PurposeSigningKey, init.SigningKey, 32}, {fabric.PurposeCAKey, init.CAKey, 0}} {
		plain, err := fabric.Unwrap(id.Secret(), w.purpose, w.b, aad)
		if err != nil || (w.size > 0 && len(plain) != w.size) {
			t.Fatalf("%s: %v", w.purpose, err)
		}
		other, _ := fabric.NewSecret()
		if _, err := fabric.Unwrap(other, w.purpose, w.b, aad); !errors.Is(err, fabric.ErrUnwrap) {
			t.Fatalf("%s opens with another secret", w.purpose)
		}
	}
	if g, err := unwrapGossip(id.Secret(), id.ClusterID, init.GossipKeys); err != nil || len(g.Keys) != 1 {
		t.Fatalf("gossip keys: %+v %v", g, err)
	}
	if _, err := Form(t.TempDir(), Host{Name: "p1", Addr: "not-an-ip"}, time.Now()); err == nil {
		t.Fatal("formed with a bad address")
	}
}

func TestJoin_refuses_before_any_network(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		token string
		addrs []string
	}{
		{"malformed token", "svcjt1.x", []string{"127.0.0.1:1"}},
		{"no address", mustToken(t), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "fabric")
			_, _, err := Join(ctx, JoinConfig{Dir: dir, Host: Host{Name: "n"}, Addrs: c.addrs, Token: c.token, Timeout: time.Second})
			if err == nil {
				t.Fatal("joined")
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Fatalf("a refused join left %s", dir)
			}
		})
	}
}

func mustToken(t *testing.T) string {
	tok, err := fabric.NewJoinToken(strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	return tok.String()
}
