package hopbatch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-project/svc/internal/hopbatch"
	"github.com/svc-project/svc/testkit/poll"
)

// peer serves batches at /batch with h, and counts the batches.
type peer struct {
	srv     *httptest.Server
	batches atomic.Int64
}

func newPeer(t *testing.T, h http.Handler) *peer {
	p := &peer{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.batches.Add(1)
		if err := hopbatch.Serve(w, r, h, hopbatch.DefaultLimits()); err != nil {
			if !errors.Is(err, hopbatch.ErrBadBatch) {
				t.Errorf("a refusal that is no ErrBadBatch: %v", err)
			}
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *peer) sender(inFlight int, hold time.Duration) *hopbatch.Sender {
	return &hopbatch.Sender{
		Transport:   p.srv.Client().Transport,
		URL:         func(addr string) string { return "http://" + addr + "/batch" },
		Limits:      hopbatch.DefaultLimits(),
		MaxInFlight: inFlight,
		Hold:        hold,
	}
}

func (p *peer) addr() string { return strings.TrimPrefix(p.srv.URL, "http://") }

// echo answers a request with its method, path, a header and its body, and
// a status taken from the path.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Echo", r.Header.Get("X-Test"))
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, "%s %s %s from %s", r.Method, r.URL.RequestURI(), b, r.RemoteAddr)
})

func request(t *testing.T, i int) *http.Request {
	req, err := http.NewRequest(http.MethodPost, "http://leader/api/v1/things/"+fmt.Sprint(i)+"?q=1", strings.NewReader(fmt.Sprintf(`{"n":%d}`, i)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Test", fmt.Sprint("t", i))
	return req
}

func TestSender_answers_each_request(t *testing.T) {
	p := newPeer(t, echo)
	s := p.sender(1, 0)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := s.Do(context.Background(), p.addr(), request(t, i))
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			want := fmt.Sprintf(`POST /api/v1/things/%d?q=1 {"n":%d} from 127.0.0.1:`, i, i)
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-Echo") != fmt.Sprint("t", i) || !strings.HasPrefix(string(b), want) {
				t.Errorf("request %d answered %s %q %q", i, resp.Status, resp.Header.Get("X-Echo"), b)
			}
			if resp.Header.Get(hopbatch.HeaderItem) != "" {
				t.Errorf("request %d's answer still carries the batch's tag", i)
			}
		}()
	}
	wg.Wait()
	if n := p.batches.Load(); n < 1 || n > 40 {
		t.Fatalf("%d batches for 40 requests", n)
	}
}

func TestSender_batches_what_arrives_while_one_is_under_way(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	arrived := make(chan string, 16)
	p := newPeer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.URL.Path
		if r.URL.Path == "/api/v1/things/0" {
			<-release
		}
		echo(w, r)
	}))
	s := p.sender(1, 0)
	t.Cleanup(unblock) // before the peer's Close, which waits for its handlers
	var wg sync.WaitGroup
	do := func(i int) {
		defer wg.Done()
		if _, err := s.Do(context.Background(), p.addr(), request(t, i)); err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	wg.Add(1)
	go do(0)
	if got := <-arrived; got != "/api/v1/things/0" {
		t.Fatalf("first to arrive: %s", got)
	}
	for i := 1; i <= 5; i++ {
		wg.Add(1)
		go do(i)
	}
	// The five wait for the one batch in flight.
	waitWaiting(t, s, 5)
	select {
	case got := <-arrived:
		t.Fatalf("%s arrived while the only slot was taken", got)
	default:
	}
	unblock()
	wg.Wait()
	if n := p.batches.Load(); n != 2 {
		t.Fatalf("%d batches, want 2: the first alone, then the five together", n)
	}
}

func TestSender_a_slow_answer_holds_up_no_other(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	p := newPeer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/things/0" {
			<-release
		}
		echo(w, r)
	}))
	s := p.sender(1, 20*time.Millisecond)
	slow := make(chan error, 1)
	go func() {
		_, err := s.Do(context.Background(), p.addr(), request(t, 0))
		slow <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A request in the same batch, or in the next once Hold passed, is
	// answered while the slow one still runs.
	for i := 1; i <= 3; i++ {
		if _, err := s.Do(ctx, p.addr(), request(t, i)); err != nil {
			t.Fatalf("request %d behind a slow one: %v", i, err)
		}
	}
	select {
	case err := <-slow:
		t.Fatalf("the slow request returned before it was released: %v", err)
	default:
	}
}

func TestSender_caller_gone(t *testing.T) {
	started := make(chan struct{})
	cancelled := make(chan struct{})
	p := newPeer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done() // the batch ends once its only caller left
		close(cancelled)
	}))
	s := p.sender(1, 0)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.Do(ctx, p.addr(), request(t, 0))
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Do after its caller left: %v", err)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the peer's handler was not cancelled 10 s after every caller left")
	}
}

func TestSender_no_answer(t *testing.T) {
	p := newPeer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic(http.ErrAbortHandler) // never reached: the server is closed first
	}))
	s := p.sender(1, 0)
	addr := p.addr()
	p.srv.Close()
	_, err := s.Do(context.Background(), addr, request(t, 0))
	if !errors.Is(err, hopbatch.ErrNoAnswer) {
		t.Fatalf("Do to a closed peer: %v", err)
	}
}

func TestServe_refuses_a_bad_batch(t *testing.T) {
	var ran atomic.Int64
	p := newPeer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran.Add(1) }))
	one := "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
	for _, tc := range []struct{ name, body string }{
		{"empty", ""},
		{"garbage", "hello\r\n\r\n"},
		{"chunked", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"},
		{"body too large", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n"},
		{"short body", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n{}"},
		{"a good one then garbage", one + "GET\r\n\r\n"},
		{"too many", strings.Repeat(one, hopbatch.DefaultLimits().MaxItems+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran.Store(0)
			resp, err := http.Post(p.srv.URL+"/batch", "application/http", bytes.NewBufferString(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "malformed request batch") {
				t.Fatalf("%s: %q", resp.Status, b)
			}
			if n := ran.Load(); n != 0 {
				t.Fatalf("%d requests of a refused batch ran", n)
			}
		})
	}
}

func TestSender_a_caller_gone_before_its_batch_goes_is_not_sent(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	var arrived sync.Map
	held := make(chan struct{})
	p := newPeer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Store(r.URL.Path, true)
		if r.URL.Path == "/api/v1/things/0" {
			close(held)
			<-release
		}
		echo(w, r)
	}))
	s := p.sender(1, 0)
	t.Cleanup(unblock) // before the peer's Close, which waits for its handlers
	first := make(chan error, 1)
	go func() {
		_, err := s.Do(context.Background(), p.addr(), request(t, 0))
		first <- err
	}()
	<-held
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := s.Do(ctx, p.addr(), request(t, 1))
		gone <- err
	}()
	waitWaiting(t, s, 1)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("Do of a caller that left: %v", err)
	}
	third := make(chan error, 1)
	go func() {
		_, err := s.Do(context.Background(), p.addr(), request(t, 2))
		third <- err
	}()
	waitWaiting(t, s, 1)
	unblock()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	if _, ok := arrived.Load("/api/v1/things/1"); ok {
		t.Fatal("the request of a caller that left was sent")
	}
}

// waitWaiting waits until n requests wait for a batch.
func waitWaiting(t *testing.T, s *hopbatch.Sender, n int) {
	t.Helper()
	poll.For(t, fmt.Sprint(n, " requests waiting for a batch"), 10*time.Second, func() error {
		if got := s.Waiting(); got != n {
			return fmt.Errorf("%d waiting", got)
		}
		return nil
	})
}

// An answer larger than a batch carries goes back as a 502 of its own; the
// others in the batch are answered.
func TestServe_an_answer_too_large_is_a_502(t *testing.T) {
	big := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/0") {
			_, _ = w.Write(bytes.Repeat([]byte("x"), int(hopbatch.DefaultLimits().MaxAnswer)+1))
			return
		}
		echo(w, r)
	})
	p := newPeer(t, big)
	s := p.sender(1, 0)
	for i, want := range []int{http.StatusBadGateway, http.StatusCreated} {
		resp, err := s.Do(context.Background(), p.addr(), request(t, i))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want || (i == 0 && !strings.Contains(string(b), "more bytes than a batch carries")) {
			t.Fatalf("request %d answered %s %.100q, want %d", i, resp.Status, b, want)
		}
	}
}
