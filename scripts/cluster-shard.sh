#!/usr/bin/env bash
# cluster-shard.sh K N: the go test -run pattern of the K-th (1..N) of N
# shares of the cluster-wide tests on the fake hypervisor (e2e/cluster).
# make unit-cluster runs the shares at once in processes of their own: the
# cluster tests mostly wait on Raft and on their peers' timers. The tests
# are dealt out in turn by name, so a new test lands in a share without a
# list to keep.
set -euo pipefail
cd "$(dirname "$0")/.."
k=$1 n=$2
names=$(grep -h -o -E '^func Test[A-Za-z0-9_]+\(t \*testing\.T\)' e2e/cluster/*_test.go | sed -E 's/^func //; s/\(.*//' | sort -u |
	awk -v k="$k" -v n="$n" '(NR - 1) % n == k - 1')
[ -n "$names" ] || { echo "cluster-shard: share $k of $n is empty" >&2; exit 1; }
echo "^($(echo "$names" | paste -sd '|'))\$"
