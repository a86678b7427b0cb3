#!/usr/bin/env bash
# bench-compare.sh: make bench's benchmarks in older trees and in this one,
# in one run, each benchmark in every tree before the next benchmark starts
# (so a slow spell of the machine falls on all trees alike), then benchstat.
#
#   scripts/bench-compare.sh REV[=REGEX] ...
#
# Each REV is checked out in a git worktree under build/bench-compare/ and
# runs the commands `make -n bench` prints in this tree (benchmarks the old
# tree lacks print nothing there); with =REGEX a tree runs only the commands
# the regular expression matches. This tree's HEAD (committed; also from a
# worktree) runs every command; BENCH_ONLY=REGEX keeps only the commands it
# matches, in every tree (a shorter run of the benchmarks a change touches).
# Output:
# build/bench-compare/<rev>.txt, head.txt and benchstat's comparison on
# stdout (also in build/bench-compare/benchstat.txt).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
out=$root/build/bench-compare
GO=${GO:-go}
BENCHSTAT=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

if [ $# -eq 0 ]; then
	sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
fi
[ -f build/mini-linux.qcow2 ] || { echo "bench-compare: run make image first" >&2; exit 1; }
export SVC_TEST_IMAGE=$root/build/mini-linux.qcow2 SVC_TEST_ISO=$root/build/mini-linux.iso

mkdir -p "$out"
names=() dirs=() filters=()
for arg in "$@"; do
	rev=${arg%%=*}
	filter=.
	[ "$arg" != "$rev" ] && filter=${arg#*=}
	sha=$(git rev-parse --short "$rev")
	dir=$out/tree-$sha
	if [ ! -d "$dir" ]; then
		git worktree add --detach "$dir" "$sha" >/dev/null
	fi
	names+=("$sha") dirs+=("$dir") filters+=("$filter")
	: >"$out/$sha.txt"
done
# This tree's commit runs from a worktree too: edits made while the run
# goes on do not reach it.
head=$(git rev-parse --short HEAD)
[ -d "$out/tree-$head" ] || git worktree add --detach "$out/tree-$head" "$head" >/dev/null
names+=(head) dirs+=("$out/tree-$head") filters+=(.)
: >"$out/head.txt"

mapfile -t cmds < <(make -s -n bench GO="$GO" | grep -E '(^| )(go|'"$GO"') test ' | grep -E -- "${BENCH_ONLY:-.}")
echo "bench-compare: ${#cmds[@]} commands in ${#names[@]} trees (${names[*]})" >&2
for cmd in "${cmds[@]}"; do
	for i in "${!names[@]}"; do
		if ! grep -qE -- "${filters[$i]}" <<<"$cmd"; then
			continue
		fi
		c=$cmd
		# The cluster benchmarks live in ./e2e/bench; older trees hold them
		# in ./peer (before the tests left it), or in ./node (before the
		# peer's wiring left node/, 71a7186).
		if [ ! -d "${dirs[$i]}/e2e/bench" ]; then
			old=./peer
			[ -d "${dirs[$i]}/peer" ] || old=./node
			c=$(sed -E "s#\./e2e/bench( |\$)#$old\1#g" <<<"$cmd")
		fi
		echo "bench-compare: [${names[$i]}] $c" >&2
		start=$(date +%s)
		if ! (cd "${dirs[$i]}" && eval "$c") >>"$out/${names[$i]}.txt" 2>&1; then
			echo "bench-compare: [${names[$i]}] failed: $c (see $out/${names[$i]}.txt)" >&2
		fi
		echo "bench-compare: [${names[$i]}] $(( $(date +%s) - start )) s" >&2
	done
done

# The trees' benchmarks may live in different packages (./e2e/bench,
# ./peer, ./node): benchstat pairs them by name, not by package.
files=()
for n in "${names[@]}"; do files+=("$out/$n.txt"); done
$GO run "$BENCHSTAT" -ignore pkg "${files[@]}" | tee "$out/benchstat.txt"
