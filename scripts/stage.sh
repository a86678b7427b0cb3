#!/usr/bin/env bash
# stage.sh NAME CMD...: runs CMD, adds NAME's wall time and exit status to
# $TEST_REPORT/stages.tsv (build/test-report by default) for
# scripts/test-report.sh, and exits as CMD did.
set -u
name=$1
shift
dir=${TEST_REPORT:-build/test-report}
mkdir -p "$dir"
start=$(date +%s)
"$@"
rc=$?
printf '%s\t%s\t%s\n' "$name" "$(($(date +%s) - start))" "$rc" >>"$dir/stages.tsv"
exit $rc
