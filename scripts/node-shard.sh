#!/usr/bin/env bash
# node-shard.sh K N SKIP: the go test -run pattern of the K-th (1..N) of N
# shares of the node package's tests that SKIP (an extended regexp of test
# names: the VM lane's) leaves. make unit-rest runs the shares at once in
# processes of their own: the node package's cluster tests mostly wait on
# Raft and on their peers' timers, and one after another they were the
# longest part of the lane (635 s of 1,000). The tests are dealt out in
# turn by name, so a new test lands in a share without a list to keep.
set -euo pipefail
cd "$(dirname "$0")/.."
k=$1 n=$2 skip=$3
names=$(grep -h -o -E '^func Test[A-Za-z0-9_]+\(t \*testing\.T\)' node/*_test.go |
	sed -E 's/^func //; s/\(.*//' | grep -v -E "$skip" | sort -u |
	awk -v k="$k" -v n="$n" '(NR - 1) % n == k - 1')
[ -n "$names" ] || { echo "node-shard: share $k of $n is empty" >&2; exit 1; }
echo "^($(echo "$names" | paste -sd '|'))\$"
