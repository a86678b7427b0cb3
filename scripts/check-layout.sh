#!/usr/bin/env bash
# check-layout.sh: the layout rules `make lint` holds the tree to.
#  - no production package depends on a test kit (testkit/...): only tests
#    and the chaos tool (cmd/svc-chaos) may;
#  - every package has a doc.go.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
bad=0
for pkg in $(go list ./... | grep -v -e "^$mod/testkit/" -e "^$mod/cmd/svc-chaos$"); do
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
exit $bad
