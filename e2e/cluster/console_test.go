package cluster

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/internal/rfb"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/testcluster"
)

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
	kit.Upload(t, cl, "tiny", disk)
	if _, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "vm1", Image: "tiny", CPU: kit.Intp(1)}); err != nil {
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
		if _, code, err := kit.DialConsole(ctx, addr, "vm1", tc.token); err == nil || code != tc.code {
			t.Errorf("%s: %d %v, want %d", tc.name, code, err, tc.code)
		}
	}
	if _, err := cl.ExecVM(ctx, kit.NS, "vm1", "stop"); err != nil {
		t.Fatal(err)
	}
	if _, code, err := kit.DialConsole(ctx, addr, "vm1", c.Token("admin", true)); err == nil || code != http.StatusConflict {
		t.Errorf("a stopped VM: %d %v", code, err)
	}
	if _, code, _ := kit.DialConsole(ctx, addr, "nope", c.Token("admin", true)); code != http.StatusNotFound {
		t.Errorf("no such VM: %d", code)
	}
}

// fakeScreen stands in for QEMU's VNC server on a VM's port: VNC
// authentication (any answer passes), then a ServerInit, or, full (as QEMU
// is past 32 viewers), a close at ClientInit.
func fakeScreen(t *testing.T, addr string, full bool) {
	t.Helper()
	guest.Serve(t, addr, func(c net.Conn) {
		buf := make([]byte, 16)
		_, _ = c.Write([]byte("RFB 003.008\n"))
		_, _ = io.ReadFull(c, buf[:12])
		_, _ = c.Write([]byte{1, rfb.SecurityVNCAuth})
		_, _ = io.ReadFull(c, buf[:1])
		_, _ = c.Write(make([]byte, 16)) // the challenge
		_, _ = io.ReadFull(c, buf[:16])
		_, _ = c.Write([]byte{0, 0, 0, 0})
		if _, err := io.ReadFull(c, buf[:1]); err != nil || full {
			return
		}
		init := make([]byte, 24, 28)
		binary.BigEndian.PutUint16(init[0:], 640)
		binary.BigEndian.PutUint16(init[2:], 480)
		init[4] = 32
		binary.BigEndian.PutUint32(init[20:], 4)
		_, _ = c.Write(append(init, "fake"...))
		_, _ = io.Copy(io.Discard, c)
	})
}

// A screen that takes no more viewers is a 429 Status before the upgrade;
// a client that upgrades and never speaks RFB is closed after the
// handshake deadline; one that does gets the screen's ServerInit.
func TestConsole_limits(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	cl := c.Client(c.Members[0])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	disk := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(disk, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	kit.Upload(t, cl, "tiny", disk)
	token := c.Token("admin", true)
	addr := c.Members[0].Peer.APIAddr()
	for _, full := range []bool{true, false} {
		name := map[bool]string{true: "full", false: "open"}[full]
		vm, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Name: name, Image: "tiny", CPU: kit.Intp(1)})
		if err != nil {
			t.Fatal(err)
		}
		fakeScreen(t, net.JoinHostPort(vm.IP, strconv.Itoa(vm.VNC)), full)
	}
	if _, code, err := kit.DialConsole(ctx, addr, "full", token); err == nil || code != http.StatusTooManyRequests {
		t.Fatalf("a full screen: %d %v", code, err)
	}

	// A client that upgrades and says nothing is closed by the peer.
	ws, _, err := kit.DialConsole(ctx, addr, "open", token)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	for {
		if _, _, err = ws.Read(rctx); err != nil {
			break
		}
	}
	if rctx.Err() != nil {
		t.Fatalf("a silent console was still open after %s", time.Since(start))
	}

	// A client that speaks RFB gets the screen.
	ws, _, err = kit.DialConsole(ctx, addr, "open", token)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	conn := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	if _, err := rfb.Login(conn, ""); err != nil {
		t.Fatal(err)
	}
	si, err := rfb.ClientInit(conn)
	if err != nil || si.Name != "fake" || si.Width != 640 {
		t.Fatalf("ServerInit %+v %v", si, err)
	}
}
