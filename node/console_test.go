package node_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/httpapi"
	"github.com/svc-project/svc/internal/testcluster"
)

// dialConsole opens a VM's console websocket at a peer, with the token as
// a browser sends it (a subprotocol), and returns the HTTP status of a
// refusal.
func dialConsole(ctx context.Context, apiAddr, vm, token string) (*websocket.Conn, int, error) {
	protos := []string{"binary"}
	if token != "" {
		protos = append(protos, httpapi.ConsoleTokenProtocol+base64.RawURLEncoding.EncodeToString([]byte(token)))
	}
	c, resp, err := websocket.Dial(ctx, "ws://"+apiAddr+"/api/v1/namespaces/"+ns+"/vms/"+vm+"/console", &websocket.DialOptions{Subprotocols: protos})
	code := 0
	if resp != nil {
		code = resp.StatusCode
	}
	return c, code, err
}

// The console refuses a caller without a token (401), one of another
// namespace (403) and a VM that is not running (409).
func TestConsole_authorization(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	cl := c.Client(c.Members[0])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	disk := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(disk, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	upload(t, cl, "tiny", disk)
	if _, err := cl.DeployVM(ctx, ns, api.DeployRequest{Name: "vm1", Image: "tiny", CPU: intp(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateNamespace(ctx, "team-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateServiceAccount(ctx, "team-b", "bot"); err != nil {
		t.Fatal(err)
	}
	other, err := cl.ServiceAccountToken(ctx, "team-b", "bot", api.TokenRequest{Duration: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	addr := c.Members[0].Peer.APIAddr()
	for _, tc := range []struct {
		name, token string
		code        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a bad token", "nope", http.StatusUnauthorized},
		{"another namespace's service account", other.Token, http.StatusForbidden},
	} {
		if _, code, err := dialConsole(ctx, addr, "vm1", tc.token); err == nil || code != tc.code {
			t.Errorf("%s: %d %v, want %d", tc.name, code, err, tc.code)
		}
	}
	if _, err := cl.ExecVM(ctx, ns, "vm1", "stop"); err != nil {
		t.Fatal(err)
	}
	if _, code, err := dialConsole(ctx, addr, "vm1", c.Token("admin", true)); err == nil || code != http.StatusConflict {
		t.Errorf("a stopped VM: %d %v", code, err)
	}
	if _, code, _ := dialConsole(ctx, addr, "nope", c.Token("admin", true)); code != http.StatusNotFound {
		t.Errorf("no such VM: %d", code)
	}
}
