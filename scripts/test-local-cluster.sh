#!/usr/bin/env bash
# Checks scripts/local-cluster.sh: 3 peers in network namespaces form a
# cluster, a tag written through peer 2 is seen on peer 3, the leader's
# process is killed and the survivors elect a new leader and take writes.
# Prints 'N passed, N failed'. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=bin/svc
export SVC_LOCAL_DIR=${SVC_LOCAL_DIR:-/tmp/svc-local-cluster-test}
export SVC_CONFIG=$SVC_LOCAL_DIR/cli.json
passed=0 failed=0
check() { # name, command...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}
api() { echo "http://10.213.0.$((10 + $1)):8080"; }
svc() { local i=$1; shift; "$bin" --api-url "$(api "$i")" "$@"; }
# poll: retry a command for up to $1 seconds
poll() { local t=$1; shift; for _ in $(seq 1 $((t * 4))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done; "$@"; }

trap 'scripts/local-cluster.sh down >/dev/null 2>&1 || true' EXIT
unset SVC_TOKEN
scripts/local-cluster.sh up 3 >/dev/null
SVC_TOKEN=$(cat "$SVC_LOCAL_DIR/admin.token")
export SVC_TOKEN

leader_of() { svc "$1" cluster info -o json | sed -n 's/.*"leader": "\(.*\)",*/\1/p'; }
tag_seen_on_3() { svc 3 node list --consistent | grep -q 'peer-1 .*ns-test'; }
three_ready() { [ "$(svc 1 node list | awk 'NR > 1 && $2 == "READY"' | wc -l)" -eq 3 ]; }
check "cluster of 3 formed" three_ready
check "tag through peer 2" svc 2 node tag peer-1 ns-test
check "tag seen on peer 3" poll 10 tag_seen_on_3

leader=$(leader_of 1)
check "a leader is known" test -n "$leader"
lidx=${leader#peer-}
kill -9 "$(cat "$SVC_LOCAL_DIR/peer-$lidx.pid")"
survivors=()
for i in 1 2 3; do [ "$i" = "$lidx" ] || survivors+=("$i"); done
new_leader() { local l; l=$(leader_of "${survivors[0]}"); [ -n "$l" ] && [ "$l" != "$leader" ]; }
check "survivors elect a new leader" poll 30 new_leader
for i in "${survivors[@]}"; do
  check "peer $i takes a write after the leader died" poll 30 svc "$i" node tag "peer-$i" survivor
done
old_not_ready() { svc "${survivors[0]}" node list | grep -q "^$leader .*NOT READY"; }
check "the dead leader's node is NOT READY" poll 30 old_not_ready

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
