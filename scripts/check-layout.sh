#!/usr/bin/env bash
# check-layout.sh: the layout rules `make lint` holds the tree to.
#  - no production package depends on a test kit (testkit/...): only tests,
#    the cluster-wide tests and their kit (e2e/...) and the test tools
#    (cmd/svc-chaos, cmd/svc-fleet, cmd/svc-testreport) may;
#  - every package has a doc.go;
#  - a test that makes a libvirt driver of its own claims its peer name
#    (testkit/peerclaim; testcluster's libvirt clusters claim theirs).
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
bad=0
for pkg in $(go list ./... | grep -v -e "^$mod/testkit/" -e "^$mod/e2e/" -e "^$mod/cmd/svc-chaos$" -e "^$mod/cmd/svc-fleet$" -e "^$mod/cmd/svc-testreport$"); do
	kits=$(go list -deps "$pkg" | grep "^$mod/testkit/" || true)
	if [ -n "$kits" ]; then
		echo "check-layout: $pkg depends on test kits: $kits" >&2
		bad=1
	fi
done
for dir in $(go list -f '{{.Dir}}' ./...); do
	if [ ! -f "$dir/doc.go" ] && [ "$(basename "$dir")" != "main" ]; then
		case "$dir" in */cmd/*) continue ;; esac
		echo "check-layout: ${dir#"$PWD/"} has no doc.go" >&2
		bad=1
	fi
done
for f in $(git grep -l -E 'New\((libvirt\.)?Config\{.*Prefix: hypervisor\.DomainPrefix' -- '*_test.go'); do
	if ! grep -q 'peerclaim\.For(' "$f"; then
		echo "check-layout: $f makes a libvirt driver without claiming its peer name (peerclaim.For)" >&2
		bad=1
	fi
done
exit $bad
