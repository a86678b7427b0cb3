package main

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/testkit/poll"
)

// waitDomainsGone waits until the agent at apiURL has finished a pass over
// its domains that began after the test's last deletes, and libvirtd lists
// no domain of peer (as `virsh list --all` shows them), so that a test whose
// last step deleted its VMs leaves nothing defined when it stops the agent.
// The absence alone is not enough: a VM's domain can be missing for a moment
// while its worker defines it again (after a save), and an agent stopped in
// that moment leaves the new definition behind.
func waitDomainsGone(t *testing.T, bin, apiURL, peer string) {
	t.Helper()
	after := reconcilePasses(t, bin, apiURL) + 2 // the pass under way may have begun before the deletes
	prefix := hypervisor.DomainPrefix(peer)
	err := poll.Until(context.Background(), 2*time.Minute, func() error {
		if n := reconcilePasses(t, bin, apiURL); n < after {
			return fmt.Errorf("%v reconcile passes done, waiting for %v", n, after)
		}
		out, err := exec.Command("virsh", "-c", "qemu:///system", "list", "--all", "--name").Output()
		if err != nil {
			return fmt.Errorf("virsh list: %w", err)
		}
		var left []string
		for _, name := range strings.Fields(string(out)) {
			if strings.HasPrefix(name, prefix) {
				left = append(left, name)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("domains left: %v", left)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the peer did not remove its deleted VMs' domains: %v", err)
	}
}

// reconcilePasses is how many passes over its domains the agent has
// completed, from `svc cluster metrics`.
func reconcilePasses(t *testing.T, bin, apiURL string) float64 {
	t.Helper()
	out, err := cli(t, bin, apiURL, "cluster", "metrics")
	if err != nil {
		t.Fatal(err)
	}
	const series = `svc_vm_reconcile_passes_total{result="done"} `
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s%s: %v", series, v, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in the agent's metrics:\n%.500s", series, out)
	return 0
}
