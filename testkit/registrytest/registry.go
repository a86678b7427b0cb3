package registrytest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/svc-project/svc/testkit/certtest"
	"github.com/svc-project/svc/testkit/guest"
)

// Binary is Debian's registry server.
const Binary = "/usr/bin/docker-registry"

// Options shape a registry.
type Options struct {
	// Plain serves plain HTTP instead of TLS with a self-signed certificate.
	Plain bool
	// Anonymous serves without authentication.
	Anonymous bool
	// Listen is the address clients reach it at (default 127.0.0.1:0),
	// e.g. a bridge's address for peers in network namespaces.
	Listen string
}

// Server is a running registry. Host is what references name
// ("127.0.0.1:PORT"); Username and Password are accepted by it.
type Server struct {
	Host, Username, Password string

	t        testing.TB
	dir      string
	backend  string
	ln       net.Listener
	cmd      *exec.Cmd
	received atomic.Int64
	sent     atomic.Int64
	rate     atomic.Int64 // bytes per second each way; 0 is unlimited
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	down     atomic.Bool
}

// Start runs a registry for the test and stops it at the test's end. It
// skips the test when the server is not installed, unless
// SVC_REQUIRE_REGISTRY=1 (CI) makes that a failure.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		if os.Getenv("SVC_REQUIRE_REGISTRY") == "1" {
			t.Fatalf("%s is missing (scripts/install-deps.sh installs it)", Binary)
		}
		t.Skipf("%s is missing: run scripts/install-deps.sh", Binary)
	}
	s := &Server{t: t, dir: t.TempDir(), Username: "svc-test", Password: "pw-" + fmt.Sprint(time.Now().UnixNano()), conns: map[net.Conn]struct{}{}}
	// The registry binds its port later: one the kernel picked and gave
	// back could be taken meanwhile (guest.FreePort).
	s.backend = net.JoinHostPort("127.0.0.1", strconv.Itoa(guest.FreePort(t, "127.0.0.1")))
	if err := s.writeConfig(o); err != nil {
		t.Fatal(err)
	}
	listen := o.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	var err error
	if s.ln, err = net.Listen("tcp", listen); err != nil {
		t.Fatal(err)
	}
	s.Host = s.ln.Addr().String()
	go s.proxy()
	s.startBackend()
	t.Cleanup(func() {
		_ = s.ln.Close()
		s.Stop()
	})
	s.waitReady(!o.Plain)
	return s
}

// writeConfig writes the server's config, certificate and password file.
func (s *Server) writeConfig(o Options) error {
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n",
		filepath.Join(s.dir, "data"), s.backend)
	if !o.Plain {
		if err := selfSigned(filepath.Join(s.dir, "cert.pem"), filepath.Join(s.dir, "key.pem")); err != nil {
			return err
		}
		cfg += fmt.Sprintf("  tls:\n    certificate: %s\n    key: %s\n", filepath.Join(s.dir, "cert.pem"), filepath.Join(s.dir, "key.pem"))
	}
	if !o.Anonymous {
		hash, err := bcrypt.GenerateFromPassword([]byte(s.Password), bcrypt.MinCost)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(s.dir, "htpasswd"), []byte(s.Username+":"+string(hash)+"\n"), 0o600); err != nil {
			return err
		}
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: svc-test\n    path: %s\n", filepath.Join(s.dir, "htpasswd"))
	}
	return os.WriteFile(filepath.Join(s.dir, "config.yml"), []byte(cfg), 0o600)
}

func selfSigned(certPath, keyPath string) error {
	certPEM, keyPEM, err := certtest.SelfSigned("svc test registry", "127.0.0.1", "localhost")
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyPath, keyPEM, 0o600)
}

func (s *Server) startBackend() {
	s.t.Helper()
	log, err := os.Create(filepath.Join(s.dir, "registry.log"))
	if err != nil {
		s.t.Fatal(err)
	}
	s.cmd = exec.Command(Binary, "serve", filepath.Join(s.dir, "config.yml"))
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.down.Store(false)
}

// waitReady polls /v2/ until the server answers (401 or 200), for 30 s.
func (s *Server) waitReady(tlsOn bool) {
	s.t.Helper()
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	cl := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's own self-signed certificate
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+s.backend+"/v2/", nil)
		if resp, err := cl.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	log, _ := os.ReadFile(filepath.Join(s.dir, "registry.log"))
	s.t.Fatalf("the registry at %s did not answer within 30 s:\n%s", s.backend, log)
}

// Stop kills the server and every connection through the proxy: the
// registry is down (Host refuses nothing but answers nothing either: each
// connection is closed at once).
func (s *Server) Stop() {
	s.down.Store(true)
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
}

// Received is how many bytes clients have sent to the registry so far.
func (s *Server) Received() int64 { return s.received.Load() }

// SetRate slows what the registry sends and receives to bytesPerSecond on
// each connection (0: no limit), so that a test can stop a pull or a push
// midway.
func (s *Server) SetRate(bytesPerSecond int64) { s.rate.Store(bytesPerSecond) }

// Sent is how many bytes the registry has sent to clients so far.
func (s *Server) Sent() int64 { return s.sent.Load() }

// proxy forwards each connection to the server, counting the bytes each way.
func (s *Server) proxy() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.serve(c)
	}
}

func (s *Server) serve(c net.Conn) {
	defer c.Close()
	if s.down.Load() {
		return
	}
	b, err := net.Dial("tcp", s.backend)
	if err != nil {
		return
	}
	defer b.Close()
	s.mu.Lock()
	s.conns[c], s.conns[b] = struct{}{}, struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		delete(s.conns, b)
		s.mu.Unlock()
	}()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(countingWriter{b, &s.received, &s.rate}, c)
		_ = b.(*net.TCPConn).CloseWrite()
		close(done)
	}()
	_, _ = io.Copy(countingWriter{c, &s.sent, &s.rate}, b)
	_ = c.Close()
	<-done
}

// Log returns the server's log, for a failing test's message.
func (s *Server) Log() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "registry.log"))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	return string(b)
}

// countingWriter counts the bytes written through it as they go, at no
// more than rate bytes per second when rate is set.
type countingWriter struct {
	w    io.Writer
	n    *atomic.Int64
	rate *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		part := p
		r := int64(0)
		if c.rate != nil {
			r = c.rate.Load()
		}
		if r > 0 {
			part = p[:min(len(p), int(max(r/10, 1)))]
			time.Sleep(time.Duration(int64(len(part)) * int64(time.Second) / r)) // the throttle itself, not a wait for a condition
		}
		n, err := c.w.Write(part)
		c.n.Add(int64(n))
		written += n
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// Transport is an HTTP transport that accepts the registry's self-signed
// certificate, for a test's own calls to it.
func (s *Server) Transport() http.RoundTripper {
	return &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // the test's own self-signed certificate
}
