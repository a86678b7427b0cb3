package api

import (
	"crypto/rand"
	"strings"
)

// GenerateName appends '-' and 5 random lowercase letters or digits to
// prefix: the names the leader gives VMs deployed with a name prefix, and
// jobs.
func GenerateName(prefix string) string {
	return prefix + "-" + strings.ToLower(rand.Text()[:5])
}
