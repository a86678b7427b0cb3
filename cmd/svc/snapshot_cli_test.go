package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-project/svc/testkit/testcluster"
)

func TestCLI_snapshot_save_inspect_restore(t *testing.T) {
	_, url, token := clusterWithVM(t, testcluster.Options{Prefix: "clisnap"})
	dir := t.TempDir()
	file := filepath.Join(dir, "c.snap")
	checkCLI(t, url, token, "", []string{"cluster", "snapshot", "save", file}, 0, "saved a snapshot of cluster", "keep it as a secret")
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("snapshot mode %v, want 0600", st.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	checkCLI(t, url, token, "", []string{"cluster", "snapshot", "inspect", file}, 0, "checksum: ok", "RECORDS", "vms", "images")
	stale := filepath.Join(dir, "stale.snap")
	checkCLI(t, url, token, "", []string{"cluster", "snapshot", "save", "--stale", stale}, 0, "saved a snapshot of cluster")
	checkCLI(t, url, token, "", []string{"cluster", "snapshot", "inspect", stale}, 0, "checksum: ok")
	checkCLI(t, url, token, "", []string{"cluster", "snapshot", "inspect", "-o", "json", file}, 0, `"clusterId"`, `"records"`)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.snap")
	if err := os.WriteFile(cut, b[:len(b)-80], 0o600); err != nil {
		t.Fatal(err)
	}
	checkCLI(t, url, token, "", []string{"cluster", "snapshot", "inspect", cut}, 1, "not a whole svc snapshot")
	checkCLI(t, url, token, "", []string{"cluster", "snapshot", "restore", cut}, 1, "not a whole svc snapshot")
	checkCLI(t, url, token, "", []string{"cluster", "snapshot", "restore", file}, 0, "restored the state of index")
	// The cluster secret is never printed.
	out, err := runSvc(t, url, token, "", "cluster", "snapshot", "inspect", "-o", "json", file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(out), "secret") {
		t.Errorf("inspect prints the secret:\n%s", out)
	}
}

func TestCLI_version_and_cluster_info_show_each_peer(t *testing.T) {
	c, url, token := clusterWithVM(t, testcluster.Options{Prefix: "cliver"})
	name := c.Members[0].Name
	checkCLI(t, url, token, "", []string{"version"}, 0, "(command level 1)", "PEER", "VERSION", "LEVEL", name, "test")
	checkCLI(t, url, token, "", []string{"cluster", "info"}, 0, "command level 1", "VERSION", name, "test")
}
