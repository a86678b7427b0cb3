package guest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// QEMUListens returns the TCP addresses the QEMU of libvirt domain domain
// listens on, as ss sees them.
func QEMUListens(tb testing.TB, domain string) []string {
	tb.Helper()
	pid, err := os.ReadFile("/run/libvirt/qemu/" + domain + ".pid")
	if err != nil {
		tb.Fatalf("the QEMU of %s: %v", domain, err)
	}
	out, err := exec.Command("ss", "-Hltnp").Output()
	if err != nil {
		tb.Fatalf("ss: %v", err)
	}
	var on []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "pid="+strings.TrimSpace(string(pid))+",") {
			on = append(on, strings.Fields(line)[3])
		}
	}
	return on
}
