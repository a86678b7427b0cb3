package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/testkit/testcluster"
)

// The image cache and warm config commands end to end: a copy to the
// tagged node that waits with a progress bar, the listing, a freed copy, a
// missing selection refused, and a config made warm whose template shows.
func TestCLI_image_cache_and_warm_config(t *testing.T) {
	t.Setenv("SVC_CONFIG", filepath.Join(t.TempDir(), "config.json"))
	c := testcluster.New(t, 2, testcluster.Options{Templates: 1})
	a, b := c.Members[0], c.Members[1]
	url, token := "http://"+a.Peer.APIAddr(), c.Token("admin", true)
	disk := filepath.Join(t.TempDir(), "disk.raw")
	if err := os.WriteFile(disk, make([]byte, 4<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := func(want string, args ...string) string {
		t.Helper()
		out, err := runSvc(t, url, token, "", args...)
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("svc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	svc("uploaded", "image", "upload", disk, "--name", "tiny")
	svc("ci", "node", "tag", b.Name, "ci")
	svc("succeeded: copied to 1 node", "image", "cache", "add", "tiny", "--tag", "ci", "--wait") // the bar goes to the terminal (stderr)
	out := svc("held", "image", "cache", "list", "tiny")
	if !strings.Contains(out, a.Name) || !strings.Contains(out, b.Name) {
		t.Fatalf("list:\n%s", out)
	}
	svc("freed", "image", "cache", "remove", "tiny", "--node", b.Name)
	if out := svc("held", "image", "cache", "list", "tiny"); strings.Contains(out, b.Name) {
		t.Fatalf("freed node still listed:\n%s", out)
	}
	if out, err := runSvc(t, url, token, "", "image", "cache", "add", "tiny"); err == nil {
		t.Fatalf("a copy without a selection was started:\n%s", out)
	}

	svc("ci", "vmconfig", "create", "ci", "--image", "tiny", "--cpu", "1", "--memory", "1", "--warm")
	c.WaitFor("the config's template listed", 30*time.Second, func() error {
		out, err := runSvc(t, url, token, "", "vmconfig", "get", "ci")
		if err != nil || !strings.Contains(out, a.Name) {
			return fmt.Errorf("%v\n%s", err, out)
		}
		return nil
	})
	svc("started:      from a booted template", "vm", "deploy", "--vmconfig", "ci", "--name", "warm-1")
	// The fake hypervisor has no guest agent: the record says the VM is not made its own.
	svc("identity:     none: the hypervisor has no guest agent", "vm", "get", "warm-1")
	out = svc("ci", "vmconfig", "warm", "ci", "--off")
	if strings.Contains(out, a.Name) {
		t.Fatalf("warm off still lists a template:\n%s", out)
	}
}
