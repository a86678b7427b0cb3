package vm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/internal/rfb"
	"github.com/svc-project/svc/testkit/testcluster"
)

// A real VM's screen through the console websocket of the peer that does
// not host it: RFB opens with no password (the proxy logged in), the screen
// is not blank, and keys typed on it log in on tty1 and run a command the
// guest then shows over SSH. Closing the websocket ends the proxy.
func TestLibvirtCluster_console(t *testing.T) {
	c, _ := kit.LibvirtCluster(t, "lvpair", 20)
	host, other := c.Members[0], c.Members[1]
	vm := kit.RealDeploy(t, c, api.DeployRequest{Image: "mini-linux", Name: "screen", Node: host.Name})
	ctx, cancel := context.WithTimeout(context.Background(), 5*kit.GuestRunWait) // the five waits below
	defer cancel()
	ws, code, err := kit.DialConsole(ctx, other.Peer.APIAddr(), "screen", c.Token("admin", true))
	if err != nil {
		t.Fatalf("console: %d %v", code, err)
	}
	defer ws.CloseNow()
	if ws.Subprotocol() != "binary" {
		t.Fatalf("subprotocol %q", ws.Subprotocol())
	}
	conn := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	if _, err := rfb.Login(conn, ""); err != nil {
		t.Fatalf("RFB opening through the proxy: %v", err)
	}
	si, err := rfb.ClientInit(conn)
	if err != nil || si.Width < 640 || si.Height < 400 {
		t.Fatalf("server init %+v %v", si, err)
	}
	var lit int
	c.WaitFor("text on the screen", kit.GuestRunWait, func() error {
		px, err := rfb.Frame(conn, si)
		if err != nil {
			t.Fatal(err)
		}
		lit = 0
		for i := 0; i+3 < len(px); i += si.BitsPerPixel / 8 {
			if px[i]|px[i+1]|px[i+2] != 0 {
				lit++
			}
		}
		if lit < 500 {
			return fmt.Errorf("%d lit pixels of %d", lit, si.Width*si.Height)
		}
		return nil
	})
	// What is typed must reach a process that reads tty1: getty and login
	// flush the terminal's input before they prompt, so keys typed while
	// login starts are lost (seen: the password typed as login appeared,
	// and no shell came). So each step waits until the process it types to
	// sleeps in a read of tty1 (tty_nr 1025: major 4, minor 1).
	// Asked through the guest agent, which runs as root: only root reads
	// another user's /proc/PID/syscall (the system call it sleeps in: read,
	// or poll as the shell's line editing waits for a key; read 0, poll 7
	// and ppoll 271 on x86-64, read 63 and ppoll 73 on arm64).
	tty1Reads := func(what, comm string) {
		const script = `for d in /proc/[0-9]*; do s=$(cat $d/stat 2>/dev/null) || continue; set -- ${s##*) }; [ "$5" = 1025 ] && echo "$(cat $d/comm) $1 $(cut -d' ' -f1 $d/syscall)"; done; true`
		c.WaitFor(what, kit.GuestRunWait, func() error {
			r, err := c.Client(host).RunVM(ctx, kit.NS, vm.Name, api.RunRequest{Command: []string{"sh", "-c", script}})
			if err != nil {
				return err
			}
			for _, line := range strings.Split(r.Stdout, "\n") {
				if f := strings.Fields(line); len(f) == 3 && f[0] == comm && f[1] == "S" && slices.Contains([]string{"0", "7", "271", "63", "73"}, f[2]) {
					return nil
				}
			}
			return fmt.Errorf("not yet (comm state syscall):\n%s%s", r.Stdout, r.Stderr)
		})
	}
	tty1Reads("getty reads a user name on tty1", "getty")
	if err := rfb.Type(conn, "admin\n"); err != nil {
		t.Fatal(err)
	}
	tty1Reads("login reads the password on tty1", "login")
	if err := rfb.Type(conn, "admin\n"); err != nil {
		t.Fatal(err)
	}
	tty1Reads("a shell reads on tty1", "sh")
	// Unshifted keys only: what a keysym needs a modifier for is the
	// keymap's business, not the proxy's.
	if err := rfb.Type(conn, "touch /tmp/typed\n"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the typed command ran", kit.GuestRunWait, func() error {
		if out := kit.GuestRun(t, c, vm, "test -e /tmp/typed && echo yes || echo no"); strings.TrimSpace(out) != "yes" {
			return fmt.Errorf("/tmp/typed: %q", out)
		}
		return nil
	})
	if out, err := c.Client(other).Metrics(ctx); err != nil || !strings.Contains(string(out), "svc_console_sessions 1") {
		t.Fatalf("the peer does not count the open console (%v)", err)
	}
	_ = ws.Close(websocket.StatusNormalClosure, "")
	// Closing the websocket ends the proxy on the peer.
	c.WaitFor("the console proxy ended", 30*time.Second, func() error {
		out, err := c.Client(other).Metrics(ctx)
		if err != nil {
			return err
		}
		if !strings.Contains(string(out), "svc_console_sessions 0") {
			return fmt.Errorf("still carried")
		}
		return nil
	})

	// A non-browser client (the Go client that 'svc vm console' uses) sends
	// the token in the Authorization header, here to the VM's own host.
	nc, err := c.Client(host).DialConsole(ctx, kit.NS, "screen")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := rfb.Login(nc, ""); err != nil {
		t.Fatal(err)
	}
	if si2, err := rfb.ClientInit(nc); err != nil || si2.Width != si.Width {
		t.Fatalf("second console: %+v %v", si2, err)
	}

	nc.Close()

	// Every websocket route, as a browser page opens it (issue 33.1):
	// through the host and through the other peer, with no Origin, the
	// peer's own and a foreign one (refused by the peer reached).
	for _, via := range []*testcluster.Member{host, other} {
		for _, origin := range []string{"", "http://" + via.Peer.APIAddr(), "http://evil.example"} {
			cl := c.Client(via)
			cl.HTTP = &http.Client{Transport: kit.WithOrigin{Origin: origin}}
			refused := strings.Contains(origin, "evil")
			what := fmt.Sprintf("through %s with Origin %q", via.Name, origin)
			con, err := cl.DialConsole(ctx, kit.NS, "screen")
			if refused != (err != nil) || (refused && !strings.Contains(err.Error(), "403")) {
				t.Fatalf("console %s: %v", what, err)
			}
			if err == nil {
				if _, err := rfb.Login(con, ""); err != nil {
					t.Fatalf("console %s: %v", what, err)
				}
				con.Close()
			}
			fwd, err := cl.DialVMPort(ctx, kit.NS, "screen", 22)
			if refused != (err != nil) || (refused && api.CodeOf(err) != http.StatusForbidden) {
				t.Fatalf("port-forward %s: %v", what, err)
			}
			if err == nil {
				banner := make([]byte, 8)
				_ = fwd.SetReadDeadline(time.Now().Add(30 * time.Second))
				if _, err := io.ReadFull(fwd, banner); err != nil || string(banner) != "SSH-2.0-" {
					t.Fatalf("port-forward %s: %q %v", what, banner, err)
				}
				fwd.Close()
			}
			var out strings.Builder
			_, err = cl.RunVMStream(ctx, kit.NS, "screen", api.RunRequest{Command: []string{"echo", "hi"}}, &out, nil)
			if refused != (err != nil) || (refused && api.CodeOf(err) != http.StatusForbidden) || (!refused && out.String() != "hi\n") {
				t.Fatalf("run %s: %q %v", what, out.String(), err)
			}
		}
	}
}
