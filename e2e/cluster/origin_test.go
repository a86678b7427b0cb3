package cluster

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/testcluster"
)

// A run's websocket, as a browser page opens it, through the VM's host and
// through another peer: no Origin (a CLI) and the peer's own Origin run the
// program; a foreign Origin is refused (403) by the peer the client reached.
// The hop to the VM's host rewrites Host, so the host must not judge the
// origin again (it refused every page's run through another peer).
func TestWebsocket_origin_judged_by_the_peer_reached(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{GuestAgent: true})
	c.WaitLeader()
	host, other := c.Members[0], c.Members[1]
	kit.TinyVM(t, c.Client(host), "vm1", host.Name)
	for _, via := range []*testcluster.Member{host, other} {
		own := "http://" + via.Peer.APIAddr()
		for _, tc := range []struct {
			name, origin string
			wantCode     int // 0: the program runs
		}{
			{"no origin", "", 0},
			{"the peer's own origin", own, 0},
			{"a foreign origin", "http://evil.example", http.StatusForbidden},
		} {
			name := tc.name + " via the host"
			if via == other {
				name = tc.name + " via another peer"
			}
			t.Run(name, func(t *testing.T) {
				cl := c.Client(via)
				cl.HTTP = &http.Client{Transport: kit.WithOrigin{Origin: tc.origin}}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var out bytes.Buffer
				res, err := cl.RunVMStream(ctx, kit.NS, "vm1", api.RunRequest{Command: []string{"echo", "hi"}}, &out, nil)
				if tc.wantCode != 0 {
					if api.CodeOf(err) != tc.wantCode {
						t.Fatalf("got %v, want %d", err, tc.wantCode)
					}
					return
				}
				if err != nil || res.ExitCode != 0 || out.String() != "hi\n" {
					t.Fatalf("run: %q exit %d: %v", out.String(), res.ExitCode, err)
				}
			})
		}
	}
}
