package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/testkit/registrytest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// runSvc runs the CLI in-process against a peer and returns its output.
func runSvc(t *testing.T, url, token, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(append([]string{"--api-url", url, "--token", token}, args...))
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// The registry commands end to end: a credential from standard input,
// catalogs, the remote listing, a pull and a push that wait with a
// progress bar, and the job list.
func TestCLI_registry_commands(t *testing.T) {
	t.Setenv("SVC_CONFIG", filepath.Join(t.TempDir(), "config.json"))
	reg := registrytest.Start(t, registrytest.Options{})
	c := testcluster.New(t, 1, testcluster.Options{})
	url, token := "http://"+c.Members[0].Peer.APIAddr(), c.Token("admin", true)
	disk := filepath.Join(t.TempDir(), "disk.raw")
	if err := os.WriteFile(disk, bytes.Repeat([]byte("svc!"), 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	ref, _ := ocidisk.ParseReference(reg.Host+"/os/tiny:1", true, false)
	if _, err := ocidisk.Push(context.Background(), ref, ocidisk.Registry{Username: reg.Username, Password: reg.Password, Insecure: true}, disk, ocidisk.Config{Kind: ocidisk.KindImage}, nil); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{reg.Password + "\n", []string{"regcred", "add", reg.Host, "-u", reg.Username, "--password-stdin", "--allow-insecure"}, "stored"},
		{"", []string{"regcred", "list"}, reg.Username},
		{"", []string{"remote", "catalogs", "--set", reg.Host + "/os/tiny"}, reg.Host + "/os/tiny"},
		{"", []string{"remote", "list"}, "tiny-1"},
		{"", []string{"image", "pull", "tiny-1", "--new-name", "tiny", "--wait"}, "succeeded"},
		{"", []string{"image", "push", "tiny", reg.Host + "/os/copy:2", "--wait"}, "succeeded"},
		{"", []string{"remote", "catalogs", "--clear"}, ""},
	} {
		out, err := runSvc(t, url, token, step.stdin, step.args...)
		if err != nil || !strings.Contains(out, step.want) {
			t.Fatalf("svc %s: %v\n%s", strings.Join(step.args, " "), err, out)
		}
	}
	out, err := runSvc(t, url, token, "", "job", "list", "-o", "json")
	var jobs api.List[api.Job]
	if err != nil || json.Unmarshal([]byte(out), &jobs) != nil || len(jobs.Items) != 2 {
		t.Fatalf("job list: %v\n%s", err, out)
	}
	if out, err := runSvc(t, url, token, "", "remote", "pull", "nope"); err == nil {
		t.Fatalf("pull of an unknown remote image succeeded:\n%s", out)
	}
}
