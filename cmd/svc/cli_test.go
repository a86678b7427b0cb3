package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/testkit/testcluster"
)

// Output formats, exit statuses, $SVC_NAMESPACE and dynamic completion of
// names from a live cluster (through cobra's completion entry point, as
// the shell scripts call it).
func TestCLI_formats_exit_codes_completion(t *testing.T) {
	c, url, token := clusterWithVM(t, testcluster.Options{})
	for _, tc := range []struct {
		name     string
		args     []string
		env      string // SVC_NAMESPACE
		wantCode int
		want     []string
	}{
		{"table", []string{"vm", "list"}, "", 0, []string{"NAME", "web-1"}},
		{"wide has every field", []string{"vm", "list", "-o", "wide"}, "", 0, []string{"VNCPASSWORD", "DEPLOYDATE", "web-1"}},
		{"json", []string{"vm", "list", "-o", "json"}, "", 0, []string{`"items"`, `"name": "web-1"`}},
		{"yaml", []string{"vm", "list", "-o", "yaml"}, "", 0, []string{"items:", "name: web-1"}},
		{"yaml of one record", []string{"image", "get", "tiny", "-o", "yaml"}, "", 0, []string{"name: tiny"}},
		{"bad format is a usage error", []string{"vm", "list", "-o", "xml"}, "", 2, nil},
		{"unknown command", []string{"vm", "explode"}, "", 2, nil},
		{"missing argument", []string{"vm", "get"}, "", 2, nil},
		{"unknown flag", []string{"vm", "list", "--nope"}, "", 2, nil},
		{"the API refuses", []string{"vm", "get", "nope"}, "", 1, []string{"not found"}},
		{"a field the API would refuse, before sending", []string{"vm", "deploy", "--image", "tiny", "--cpu", "0"}, "", 2, []string{"--cpu: 0 is not between 1 and 256"}},
		{"a metadata key deploy refuses, for a config too", []string{"vmconfig", "create", "c", "--image", "tiny", "--metadata", strings.Repeat("k", 64) + "=v"}, "", 2, []string{"--metadata: key", "63"}},
		{"namespace from the environment", []string{"vm", "list"}, "team-x", 1, []string{"team-x"}},
		{"vm names complete", []string{"__complete", "vm", "get", ""}, "", 0, []string{"web-1"}},
		{"by prefix", []string{"__complete", "vm", "delete", "we"}, "", 0, []string{"web-1"}},
		{"image flag completes", []string{"__complete", "vm", "deploy", "--image", ""}, "", 0, []string{"tiny"}},
		{"node names complete", []string{"__complete", "node", "tag", ""}, "", 0, []string{c.Members[0].Name}},
		{"bash script", []string{"completion", "bash"}, "", 0, []string{"__start_svc"}},
		{"zsh script", []string{"completion", "zsh"}, "", 0, []string{"#compdef svc"}},
		{"fish script", []string{"completion", "fish"}, "", 0, []string{"complete -c svc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SVC_NAMESPACE", tc.env)
			checkCLI(t, url, token, "", tc.args, tc.wantCode, tc.want...)
		})
	}
}

// clusterWithVM starts a one-peer cluster (fake hypervisor) with image
// "tiny" and VM "web-1" deployed from it, and points the CLI's config at a
// file of the test's own.
func clusterWithVM(t *testing.T, opts testcluster.Options) (c *testcluster.Cluster, url, token string) {
	t.Helper()
	t.Setenv("SVC_CONFIG", filepath.Join(t.TempDir(), "config.json"))
	c = testcluster.New(t, 1, opts)
	url, token = "http://"+c.Members[0].Peer.APIAddr(), c.Token("admin", true)
	cl := c.Client(c.Members[0])
	disk := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(disk, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(disk)
	defer f.Close()
	if _, err := cl.UploadImage(context.Background(), api.DefaultNamespace, "tiny", f, 2<<20); err != nil {
		t.Fatal(err)
	}
	one := 1
	if _, err := cl.DeployVM(context.Background(), api.DefaultNamespace, api.DeployRequest{Name: "web-1", Image: "tiny", CPU: &one}); err != nil {
		t.Fatal(err)
	}
	return c, url, token
}

// checkCLI runs the CLI in-process and checks its exit status and that
// its output (and error) holds each of want.
func checkCLI(t *testing.T, url, token, stdin string, args []string, wantCode int, want ...string) {
	t.Helper()
	out, err := runSvc(t, url, token, stdin, args...)
	if code := exitCode(err); code != wantCode {
		t.Fatalf("exit %d, want %d: %v\n%s", code, wantCode, err, out)
	}
	text := out
	if err != nil {
		text += err.Error()
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%q not in:\n%s", w, text)
		}
	}
}
