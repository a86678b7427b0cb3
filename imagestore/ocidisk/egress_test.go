package ocidisk

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestEgress_addresses(t *testing.T) {
	none, _ := ParseEgress(nil)
	some, err := ParseEgress([]string{"10.0.0.0/8", "192.168.1.7", "localhost", "fd00:1::/64"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		registry string
		policy   *Egress
		ok       bool
	}{
		{"8.8.8.8", &none, true},
		{"[2001:4860::8888]:443", &none, true},
		{"169.254.169.254", &none, false},
		{"169.254.169.254", &some, false},
		{"[fd00:ec2::254]", &none, false},
		{"10.1.2.3:5000", &none, false},
		{"10.1.2.3:5000", &some, true},
		{"172.16.0.1", &none, false},
		{"192.168.1.7", &some, true},
		{"192.168.1.8", &some, false},
		{"127.0.0.1:5000", &none, false},
		{"[::1]:5000", &none, false},
		{"[fe80::1]", &none, false},
		{"[::ffff:10.0.0.1]", &none, false},
		{"100.64.0.1", &none, false},
		{"240.0.0.1", &none, false},
		{"0.0.0.0", &none, false},
		{"224.0.0.1", &none, false},
		{"localhost:5000", &none, false}, // resolves to loopback
		{"localhost:5000", &some, true},  // named in the allow list
		{"[fd00:1::5]", &some, true},
	}
	for _, c := range cases {
		t.Run(c.registry, func(t *testing.T) {
			err := c.policy.CheckRegistry(context.Background(), c.registry)
			if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrUnreachable)) {
				t.Fatalf("CheckRegistry(%s) = %v, want allowed %v", c.registry, err, c.ok)
			}
		})
	}
	for _, bad := range []string{"10.0.0.0/33", "not a host!", "-x.example"} {
		if _, err := ParseEgress([]string{bad}); err == nil {
			t.Errorf("ParseEgress(%q) took it", bad)
		}
	}
	if p := some.Prefixes[1]; p != netip.MustParsePrefix("192.168.1.7/32") {
		t.Errorf("an address is taken as %s", p)
	}
}

// Every way a registry address fails below HTTP reads the same, so that a
// job's message does not map the network; a refused address is refused
// before any connection.
func TestEgress_failures_read_alike(t *testing.T) {
	policy := &Egress{Prefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	_ = closed.Close()
	eof, _ := net.Listen("tcp", "127.0.0.1:0")
	t.Cleanup(func() { _ = eof.Close() })
	go func() {
		for {
			c, err := eof.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	plain, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(plain) }()
	t.Cleanup(func() { _ = srv.Close() })
	for _, insecure := range []bool{false, true} {
		var reasons []string
		for _, addr := range []string{closedAddr, eof.Addr().String(), plain.Addr().String()} {
			if insecure && addr == plain.Addr().String() {
				continue // plain HTTP is what insecure allows: it answers 404
			}
			ref, err := ParseReference(addr+"/x:y", insecure, false)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err = Resolve(ctx, ref, Registry{Egress: policy, Insecure: insecure})
			cancel()
			if err == nil {
				t.Fatalf("%s answered", addr)
			}
			reasons = append(reasons, Reason(err))
		}
		for _, r := range reasons {
			if r != reasons[0] || strings.Contains(r, "127.0.0.1") {
				t.Fatalf("insecure %v: the failures read differently or name the address:\n%s", insecure, strings.Join(reasons, "\n"))
			}
		}
	}
	ref, _ := ParseReference("169.254.169.254/x:y", false, false)
	if _, err := Resolve(context.Background(), ref, Registry{Egress: policy}); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("the metadata address: %v", err)
	}
}
