#!/usr/bin/env bash
# Checks that no type declares more than MAX (40) methods: a type that does
# has taken several jobs, each of which wants a type of its own. The
# exceptions are types whose methods are one list by nature: raftfsm's State
# and FSM (one apply method per replicated command, one view per record)
# and api.Client (one method per route). Counts the methods declared in
# production files (gofmt'd: "func (r *T) Name(" at the start of a line),
# per package and type; with -v, prints every type over 15 too.
set -euo pipefail
cd "$(dirname "$0")/.."
max=40
except=" raftfsm.State raftfsm.FSM api.Client "
verbose=${1:-}
bad=0
while read -r n pkgtype; do
	if [ "$n" -gt "$max" ] && [[ $except != *" ${pkgtype##*/} "* ]]; then
		echo "check-methods: $pkgtype declares $n methods (at most $max): give its jobs types of their own"
		bad=1
	elif [ "$verbose" = -v ] && [ "$n" -gt 15 ]; then
		echo "check-methods: $pkgtype $n"
	fi
done < <(git ls-files '*.go' ':!:*_test.go' ':!:testkit/**' ':!:build/**' |
	xargs awk '
		FNR == 1 { dir = FILENAME; sub(/\/[^\/]*$/, "", dir); if (dir == FILENAME) dir = "." }
		/^func \([A-Za-z_][A-Za-z0-9_]* \*?[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\) [A-Za-z_]/ {
			t = $3; sub(/\).*/, "", t); sub(/^\*/, "", t); sub(/\[.*/, "", t)
			n[dir "." t]++
		}
		END { for (k in n) print n[k], k }' | sort -rn)
exit $bad
