package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/testkit/oidcnode"
	"github.com/svc-project/svc/testkit/poll"
)

// TestBinary_login_at_a_certified_provider: the real binary against a
// second provider implementation (Node.js oidc-provider) set up as the
// common ones are by default: ID tokens with "sub" only, a confidential
// client that must authenticate at the device endpoint, iss in its
// answers. svc login (the provider's pages answered as a browser would,
// back to svc login's loopback listener) and svc login --device both sign
// in, with roles from the groups UserInfo names.
func TestBinary_login_at_a_certified_provider(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	op := oidcnode.Start(t, []oidcnode.Person{
		{Username: "alice", Email: "alice@corp.example", Groups: []string{"dev"}},
		{Username: "bob", Email: "bob@corp.example", Groups: []string{"ops-admins"}},
	})
	bin := buildBinary(t)
	dir := t.TempDir()
	const ip = "127.0.253.1" // this test's own address
	ports := freePortsOn(t, ip, 4)
	runAgent(t, bin, dir, "cert-1", nil, "--bind", ip, "--data-dir", filepath.Join(dir, "cert-1"), "--hypervisor", "fake",
		"--registry-allow", "127.0.0.0/8", "--cpu", "4", "--memory", "8", "--gpu", "0", "--bootstrap-expect", "1",
		"--api-port", strconv.Itoa(ports[0]), "--raft-port", strconv.Itoa(ports[1]), "--gossip-port", strconv.Itoa(ports[2]), "--tls-port", strconv.Itoa(ports[3]))
	apiURL := "http://" + ip + ":" + strconv.Itoa(ports[0])
	root := person{t: t, bin: bin, api: apiURL, configPath: filepath.Join(dir, "root.json")}
	if err := poll.Until(context.Background(), 60*time.Second, func() error {
		tok, err := os.ReadFile(filepath.Join(dir, "cert-1", "admin.token"))
		if err != nil {
			return err
		}
		if _, errOut, code := root.run("", "user", "set-token", strings.TrimSpace(string(tok))); code != 0 {
			return fmt.Errorf("%s", errOut)
		}
		if _, errOut, code := root.run("", "node", "list"); code != 0 {
			return fmt.Errorf("%s", errOut)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := root.run(op.ClientSecret+"\n", "cluster", "oidc", "set", "node", "--issuer", op.Issuer, "--client-id", op.ClientID,
		"--client-secret-stdin", "--scopes", "openid,email,profile,groups", "--admin-group", "ops-admins", "--allowed-group", "dev"); code != 0 {
		t.Fatalf("oidc set: %d %s %s", code, out, errOut)
	}
	ctx := context.Background()

	// alice: svc login, the provider's pages answered, back to its listener
	alice := person{t: t, bin: bin, api: apiURL, configPath: filepath.Join(dir, "alice.json")}
	l := alice.startLogin("--provider", "node", "--no-browser")
	authURL := l.find(t, regexp.MustCompile(`^\s+(http://\S+)$`))
	back, err := op.SignIn(ctx, authURL, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if back.Query().Get("iss") != op.Issuer {
		t.Fatalf("the provider's answer names no issuer: %s", back)
	}
	resp, err := http.Get(back.String()) // the browser, back at svc login's listener
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if out := l.wait(t); !strings.Contains(out, "Signed in as alice@corp.example through node (role user; groups: dev)") {
		t.Fatalf("svc login printed %q", out)
	}

	// bob: svc login --device, the client authenticating at the device endpoint
	bob := person{t: t, bin: bin, api: apiURL, configPath: filepath.Join(dir, "bob.json")}
	l = bob.startLogin("--provider", "node", "--device")
	code := l.find(t, regexp.MustCompile(`^\s+([A-Z0-9-]{6,})$`))
	if err := op.ApproveDevice(ctx, code, "bob", true); err != nil {
		t.Fatal(err)
	}
	if out := l.wait(t); !strings.Contains(out, "Signed in as bob@corp.example through node (role admin") {
		t.Fatalf("svc login --device printed %q", out)
	}
	if out := bob.must("namespace", "create", "bobs"); !strings.Contains(out, "bobs") {
		t.Fatalf("bob makes a namespace: %s", out)
	}
}
