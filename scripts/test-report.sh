#!/usr/bin/env bash
# test-report.sh: what make test prints at its end, pass or fail: each
# stage's wall time (scripts/stage.sh wrote them, in the order they ended;
# the two lanes run at once) and the 15 slowest tests and benchmarks of
# the go test runs that wrote their events (go test -json) to
# $TEST_REPORT (build/test-report by default), so that the next slow test
# is seen where it appears; last, each failed test and each that never
# ended (its binary timed out), in short with why and where it waited,
# where a CI log's tail shows it.
set -u
cd "$(dirname "$0")/.."
dir=${TEST_REPORT:-build/test-report}
slowest=${SLOWEST:-15}
echo
echo "== make test: stages (wall time; the VM lane and the other run at once)"
if [ -f "$dir/stages.tsv" ]; then
	awk -F'\t' '{ printf "  %-22s %6d s  %s\n", $1, $2, ($3 == 0 ? "ok" : "FAILED (exit " $3 ")") }' "$dir/stages.tsv"
fi
shopt -s nullglob
files=("$dir"/*.json)
if [ ${#files[@]} -gt 0 ]; then
	echo "== the $slowest slowest tests"
	go run ./cmd/svc-testreport slowest -n "$slowest" "${files[@]}" | sed 's/^/  /'
	failed=$(go run ./cmd/svc-testreport failures "${files[@]}")
	if [ -n "$failed" ]; then
		echo "== what failed"
		printf '%s\n' "$failed" | sed 's/^/  /'
	fi
fi
