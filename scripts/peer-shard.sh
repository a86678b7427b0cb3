#!/usr/bin/env bash
# peer-shard.sh K N SKIP [KEEP]: the go test -run pattern of the K-th
# (1..N) of N shares of the peer package's tests that SKIP (an extended
# regexp of test names: the VM lane's) leaves, and of those it would skip
# that KEEP names (the VM lane's tests moved here to even the lanes). make unit-rest runs the shares at once in
# processes of their own: the peer package's cluster tests mostly wait on
# Raft and on their peers' timers, and one after another they were the
# longest part of the lane (635 s of 1,000). The tests are dealt out in
# turn by name, so a new test lands in a share without a list to keep.
set -euo pipefail
cd "$(dirname "$0")/.."
k=$1 n=$2 skip=$3 keep=${4:-^$}
all=$(grep -h -o -E '^func Test[A-Za-z0-9_]+\(t \*testing\.T\)' peer/*_test.go | sed -E 's/^func //; s/\(.*//')
# The tests on real guests (TestLibvirt*: minutes each under emulation)
# are dealt first, the others after, so that each share gets its part of
# both.
names=$({ echo "$all" | grep -v -E "$skip" || true; echo "$all" | grep -E "$keep" || true; } | sort -u |
	awk '{ print ($0 ~ /^TestLibvirt/ ? 0 : 1), $0 }' | sort -k1,1n -k2,2 | cut -d' ' -f2 |
	awk -v k="$k" -v n="$n" '(NR - 1) % n == k - 1')
[ -n "$names" ] || { echo "peer-shard: share $k of $n is empty" >&2; exit 1; }
echo "^($(echo "$names" | paste -sd '|'))\$"
