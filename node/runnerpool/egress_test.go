package runnerpool

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/runners/github"
)

// A GitHub Enterprise Server on a private address, not in the agent's
// --registry-allow: the pool's call is refused before any connection, and
// the error names the rule and the flag.
func TestEgress_a_private_GitHub_is_refused_naming_the_rule(t *testing.T) {
	var e ocidisk.Egress // public addresses only
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = e.Dialer()
	gh, err := github.New(github.Config{APIBase: "http://10.20.30.40/api/v3/", Scope: github.Scope{Owner: "acme"}, Auth: github.Auth{Token: "t"}, Transport: egressNamed{tr}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = gh.JITConfig(context.Background(), "r", []string{"self-hosted"}, 0)
	if !errors.Is(err, ocidisk.ErrUnreachable) || !strings.Contains(err.Error(), "egress rule") || !strings.Contains(err.Error(), "--registry-allow") || !strings.Contains(err.Error(), "10.20.30.40") {
		t.Fatalf("got %v", err)
	}
}

func TestLabels_os_and_arch(t *testing.T) {
	for _, tc := range []struct {
		os, arch string
		want     []string
	}{
		{raftfsm.OSLinux, "amd64", []string{"Linux", "X64"}},
		{raftfsm.OSMacOS, "arm64", []string{"macOS", "ARM64"}},
		{raftfsm.OSLinux, "riscv64", []string{"Linux", ""}},
	} {
		if got := []string{osLabel(tc.os), archLabel(tc.arch)}; got[0] != tc.want[0] || got[1] != tc.want[1] {
			t.Errorf("%q %q: %v, want %v", tc.os, tc.arch, got, tc.want)
		}
	}
}
