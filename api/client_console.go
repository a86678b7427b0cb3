package api

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/coder/websocket"
)

// DialConsole opens a VM's screen: a connection carrying RFB (VNC) that
// opens with no security of its own (the API token authorized it), through
// whichever peer the client talks to. Closing it ends the console.
func (c *Client) DialConsole(ctx context.Context, namespace, vm string) (net.Conn, error) {
	u := strings.TrimRight(c.BaseURL, "/") + nsPath(namespace, "vms", vm, "console")
	h := http.Header{}
	if c.Token != "" {
		h.Set("Authorization", "Bearer "+c.Token)
	}
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: h, Subprotocols: []string{"binary"}, HTTPClient: c.HTTP})
	if err != nil {
		if resp != nil && resp.StatusCode >= 300 {
			return nil, fmt.Errorf("console of vm %s: %s: %w", vm, resp.Status, err)
		}
		return nil, fmt.Errorf("console of vm %s: %w", vm, err)
	}
	ws.SetReadLimit(1 << 24)
	// The connection lives as long as the caller keeps it, not as long as ctx.
	return websocket.NetConn(context.WithoutCancel(ctx), ws, websocket.MessageBinary), nil
}
