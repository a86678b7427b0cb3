package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/testkit/poll"
)

// serveOn starts s on a loopback listener until the test ends or stop is
// called, and returns its address.
func serveOn(t *testing.T, s *Server) (addr string, stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(ctx, l, nil)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return l.Addr().String(), stop
}

// rawConn is a client connection that speaks HTTP/1.1 by hand.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// response reads one answer, with a deadline.
func (c *rawConn) response(within time.Duration) (*http.Response, []byte, error) {
	_ = c.SetReadDeadline(time.Now().Add(within))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// closedByServer reports whether the server closed the connection before
// the deadline (whatever it sent first, such as a 408, is read and dropped).
func (c *rawConn) closedByServer(within time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, c.r)
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// trickle writes s one byte every step until it is written or a write fails.
func trickle(c net.Conn, s string, step time.Duration) {
	for i := range len(s) {
		if _, err := c.Write([]byte{s[i]}); err != nil {
			return
		}
		time.Sleep(step)
	}
}

// Idle keep-alive connections, a client that sends its headers slowly and one
// that sends its body slowly are all reclaimed by their deadlines, while an
// upload that keeps making progress goes on past them and other clients are
// served throughout.
func TestConns_reclaimed_by_their_deadlines(t *testing.T) {
	const step = 100 * time.Millisecond
	lim := Limits{IdleTimeout: 500 * time.Millisecond, HeaderTimeout: 500 * time.Millisecond, BodyTimeout: 500 * time.Millisecond,
		UploadIdleTimeout: 500 * time.Millisecond, MaxConns: 5000, MaxConnsPerClient: 2000}
	s := New(fakeConfig(newFakeBackend(t, true), Config{Limits: lim}))
	addr, _ := serveOn(t, s)
	tok := adminToken(t)

	idle := make([]*rawConn, 1000)
	for i := range idle {
		c := dialRaw(t, addr)
		fmt.Fprintf(c, "GET /api/v1/cluster-info HTTP/1.1\r\nHost: svc\r\n\r\n")
		if resp, _, err := c.response(5 * time.Second); err != nil || resp.StatusCode != 200 {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		idle[i] = c
	}
	slowHeader := dialRaw(t, addr)
	go trickle(slowHeader, "GET /api/v1/cluster-info HTTP/1.1\r\nHost: svc\r\nX-Slow: "+strings.Repeat("a", 100)+"\r\n\r\n", step)
	slowBody := dialRaw(t, addr)
	body := `{"tag":"` + strings.Repeat("a", 60) + `"}`
	fmt.Fprintf(slowBody, "POST /api/v1/namespaces/svc-default/nodes/n1/tag HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", tok, len(body))
	go trickle(slowBody, body, step)
	// 12 bytes a step apart: 1.2 s in all, more than twice every timeout, but
	// never a pause as long as the upload's.
	upload := dialRaw(t, addr)
	fmt.Fprintf(upload, "POST /api/v1/namespaces/svc-default/upload/image?name=slow HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer %s\r\nContent-Type: application/octet-stream\r\nContent-Length: 12\r\n\r\n", tok)
	go trickle(upload, "not a disk!!", step)

	// Another client is served all along.
	stop := make(chan struct{})
	var served, failed atomic.Int32
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cl := &http.Client{Timeout: 2 * time.Second}
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			resp, err := cl.Get("http://" + addr + "/api/v1/cluster-info")
			if err != nil || resp.StatusCode != 200 {
				failed.Add(1)
				continue
			}
			resp.Body.Close()
			served.Add(1)
		}
	}()

	resp, b, err := slowBody.response(5 * time.Second)
	if err != nil || resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("slow body: %v %v %s", resp, err, b)
	}
	var st api.Status
	if err := json.Unmarshal(b, &st); err != nil || st.Reason != api.ReasonTimeout {
		t.Fatalf("slow body's answer is not a Timeout Status: %s", b)
	}
	if !slowHeader.closedByServer(5 * time.Second) {
		t.Fatal("the slow-header connection is still open")
	}
	for i, c := range idle {
		if !c.closedByServer(5 * time.Second) {
			t.Fatalf("idle connection %d is still open", i)
		}
	}
	resp, b, err = upload.response(5 * time.Second)
	if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "not a disk image") {
		t.Fatalf("a slow upload that kept progressing: %v %v %s", resp, err, b)
	}
	close(stop)
	wg.Wait()
	if failed.Load() != 0 || served.Load() < 10 {
		t.Fatalf("other client: %d served, %d failed", served.Load(), failed.Load())
	}
	poll.For(t, "the reclaimed connections uncounted", 5*time.Second, func() error {
		if n := s.conns.open(); n > 2 {
			return fmt.Errorf("%d connections still counted", n)
		}
		return nil
	})
}

// A client over its connection limit is answered 503 (a Status body) and
// closed; the cluster's peers are never refused.
func TestConns_limits_per_client_and_in_all(t *testing.T) {
	cases := []struct {
		name         string
		limits       Limits
		peer         bool
		wantRefusals bool
	}{
		{name: "per client", limits: Limits{MaxConnsPerClient: 5, MaxConns: 100}, wantRefusals: true},
		{name: "in all", limits: Limits{MaxConnsPerClient: 100, MaxConns: 5}, wantRefusals: true},
		{name: "a peer is let in", limits: Limits{MaxConnsPerClient: 5, MaxConns: 5}, peer: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newFakeBackend(t, true)
			if c.peer {
				b.peerAddr = "127.0.0.1"
			}
			s := New(fakeConfig(b, Config{Limits: c.limits}))
			addr, _ := serveOn(t, s)
			for i := range 5 {
				conn := dialRaw(t, addr)
				fmt.Fprintf(conn, "GET /api/v1/cluster-info HTTP/1.1\r\nHost: svc\r\n\r\n")
				if resp, _, err := conn.response(5 * time.Second); err != nil || resp.StatusCode != 200 {
					t.Fatalf("connection %d: %v", i, err)
				}
			}
			extra := dialRaw(t, addr)
			fmt.Fprintf(extra, "GET /api/v1/cluster-info HTTP/1.1\r\nHost: svc\r\n\r\n")
			resp, body, err := extra.response(5 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if !c.wantRefusals {
				if resp.StatusCode != 200 {
					t.Fatalf("a peer's sixth connection: %d %s", resp.StatusCode, body)
				}
				return
			}
			var st api.Status
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || json.Unmarshal(body, &st) != nil || st.Kind != "Status" {
				t.Fatalf("over the limit: %d %s", resp.StatusCode, body)
			}
			if !extra.closedByServer(5 * time.Second) {
				t.Fatal("a refused connection stayed open")
			}
		})
	}
}

// What net/http refuses before any handler runs is answered with the same
// Status body as every other refusal.
func TestConns_early_refusals_are_statuses(t *testing.T) {
	s := New(fakeConfig(newFakeBackend(t, true), Config{}))
	addr, _ := serveOn(t, s)
	cases := []struct {
		name, request string
		code          int
	}{
		{"headers over the limit", "GET /api/v1/cluster-info HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 100<<10) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
		{"a path over the limit", "GET /api/v1/" + strings.Repeat("p", 100<<10) + " HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
		{"a malformed request line", "GARBAGE\r\n\r\n", http.StatusBadRequest},
		{"a malformed header", "GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", http.StatusBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := dialRaw(t, addr)
			if _, err := io.WriteString(conn, c.request); err != nil {
				t.Fatal(err)
			}
			resp, b, err := conn.response(5 * time.Second)
			var st api.Status
			if err != nil || resp.StatusCode != c.code || resp.Header.Get("Content-Type") != "application/json" ||
				json.Unmarshal(b, &st) != nil || st.Code != c.code || st.Kind != "Status" {
				t.Fatalf("%v %v %s", resp, err, b)
			}
		})
	}
}

// sendWhole writes a request with a body of n bytes whole, as most HTTP
// libraries do before they read the answer, and returns the answer.
func sendWhole(t *testing.T, addr, head string, n int) (*http.Response, []byte, error) {
	t.Helper()
	c := dialRaw(t, addr)
	if _, err := io.WriteString(c, head+"Content-Length: "+fmt.Sprint(n)+"\r\n\r\n"); err != nil {
		return nil, nil, err
	}
	chunk := make([]byte, 64<<10)
	for sent := 0; sent < n; sent += len(chunk) {
		if _, err := c.Write(chunk[:min(len(chunk), n-sent)]); err != nil {
			return nil, nil, fmt.Errorf("after %d bytes: %w", sent, err)
		}
	}
	return c.response(10 * time.Second)
}

// A peer that is catching up waits a moment for its replica instead of
// refusing at once, and a request refused before its body was read (a
// peer that does not catch up in time, a missing token) still gets its
// Status after sending a 15 MB body, not a reset connection.
func TestConns_refusals_reach_clients_that_send_first(t *testing.T) {
	const size = 15 << 20
	upload := "POST /api/v1/namespaces/svc-default/upload/image?name=%s HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/octet-stream\r\n"
	auth := "Authorization: Bearer " + adminToken(t) + "\r\n"

	soon := newFakeBackend(t, true)
	soon.caughtUp = make(chan struct{})
	soonAddr, _ := serveOn(t, New(fakeConfig(soon, Config{})))
	addr := soonAddr
	time.AfterFunc(300*time.Millisecond, func() { close(soon.caughtUp) })
	resp, b, err := sendWhole(t, addr, fmt.Sprintf(upload, "soon", auth), size)
	if err != nil || resp.StatusCode != http.StatusCreated { // 15 MiB of zeros: a raw disk
		t.Fatalf("an upload to a peer a moment from caught up: %v %v %s", resp, err, b)
	}

	never := newFakeBackend(t, true)
	never.caughtUp = make(chan struct{})
	neverAddr, _ := serveOn(t, New(fakeConfig(never, Config{})))
	for _, c := range []struct {
		name, addr, head string
		code             int
	}{
		{"a peer that does not catch up", neverAddr, fmt.Sprintf(upload, "late", auth), http.StatusServiceUnavailable},
		{"no token", soonAddr, fmt.Sprintf(upload, "anon", ""), http.StatusUnauthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, b, err := sendWhole(t, c.addr, c.head, size)
			var st api.Status
			if err != nil || resp.StatusCode != c.code || json.Unmarshal(b, &st) != nil || st.Code != c.code {
				t.Fatalf("%v %v %s", resp, err, b)
			}
		})
	}
}

// A refusal answered while a large body is still on its way (what an old
// leader does to a forwarded upload, what a client that reads as it sends
// meets) keeps the connection: the peer reads the rest of the body after
// its answer, where net/http would mark it Connection: close and close it
// under the sender, who could then lose the answer mid-way (a forwarding
// peer did, and answered a 500 after the relayed 503).
func TestConns_an_early_answer_keeps_the_connection(t *testing.T) {
	addr, _ := serveOn(t, New(fakeConfig(newFakeBackend(t, true), Config{})))
	const size = 4 << 20
	c := dialRaw(t, addr)
	head := "POST /api/v1/namespaces/svc-default/upload/image?name=x HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: " + fmt.Sprint(size) + "\r\n\r\n"
	chunk := make([]byte, 64<<10)
	if _, err := c.Write(append([]byte(head), chunk...)); err != nil {
		t.Fatal(err)
	}
	resp, b, err := c.response(10 * time.Second) // no token: refused at once
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("%v %v %s", resp, err, b)
	}
	if resp.Close {
		t.Fatalf("the refusal closes the connection under a body still sent: %v", resp.Header)
	}
	for sent := len(chunk); sent < size; sent += len(chunk) {
		if _, err := c.Write(chunk[:min(len(chunk), size-sent)]); err != nil {
			t.Fatalf("the rest of the body, after %d bytes: %v", sent, err)
		}
	}
	fmt.Fprintf(c, "GET /api/v1/cluster-info HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, b, err := c.response(10 * time.Second); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the next request on the connection: %v %v %s", resp, err, b)
	}
}
