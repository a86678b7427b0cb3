#!/usr/bin/env bash
# Checks scripts/local-cluster.sh: 3 peers in network namespaces form a
# cluster (peer 1 forms it, the others join with a token), a tag written
# through peer 2 is seen on peer 3; a host in a namespace of its own that
# tries to join with no token, an expired one or a revoked one is refused,
# says why and is never a node; the leader's process is killed and the
# survivors elect a new leader and take writes. Prints 'N passed, N failed'.
# Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=bin/svc
# Its peers run VMs on this machine's libvirtd: their names are claimed for
# the test (testkit/peerclaim), so that no other cluster of make test takes
# them and removes their domains, or has its own removed.
"${GO:-go}" run ./testkit/peerclaim/claim -owner scripts/test-local-cluster.sh -pid $$ peer-1 peer-2 peer-3
export SVC_LOCAL_DIR=${SVC_LOCAL_DIR:-/tmp/svc-local-cluster-test}
export SVC_CONFIG=$SVC_LOCAL_DIR/cli.json
passed=0 failed=0
check() { # name, command...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}
api() { echo "http://10.213.0.$((10 + $1)):8080"; }
bin=$(realpath "$bin")
svc() { local i=$1; shift; "$bin" --api-url "$(api "$i")" "$@"; }
# poll: retry a command for up to $1 seconds
poll() { local t=$1; shift; for _ in $(seq 1 $((t * 4))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done; "$@"; }

rogue_ns=svc-rogue
rogue_down() {
  ip netns pids "$rogue_ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns delete "$rogue_ns" 2>/dev/null || true
  ip link delete svcvrogue 2>/dev/null || true
}
trap 'rogue_down; scripts/local-cluster.sh down >/dev/null 2>&1 || true' EXIT
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

# A host of its own on the cluster's network, at 10.213.0.99, tries to join.
rogue_down
ip netns add "$rogue_ns"
ip link add svcvrogue type veth peer name eth0 netns "$rogue_ns"
ip link set svcvrogue master svcbr0 up
ip -n "$rogue_ns" addr add 10.213.0.99/24 dev eth0
ip -n "$rogue_ns" link set eth0 up
ip -n "$rogue_ns" link set lo up
# rogue_join NAME TOKEN WANT: the host must exit (bounded), its log must say
# WANT, and its data dir must hold no Raft state or identity.
rogue_join() {
  local name=$1 token=$2 want=$3 d=$SVC_LOCAL_DIR/$1 code=0
  rm -rf "$d"; mkdir -p "$d"
  SVC_JOIN_TOKEN=$token timeout 60 ip netns exec "$rogue_ns" "$bin" agent --name "$name" --bind 10.213.0.99 \
    --data-dir "$d/data" --join 10.213.0.11:7946 --hypervisor fake --cpu 1 --memory 1 --gpu 0 >"$d/log" 2>&1 || code=$?
  [ "$code" -ne 0 ] && [ "$code" -ne 124 ] && grep -q "$want" "$d/log" && [ ! -e "$d/data/raft" ] && [ ! -e "$d/data/fabric" ] ||
    { echo "  exit $code; log:"; tail -n 5 "$d/log"; return 1; }
}
revoked=$(svc 1 cluster join-token create 2>/dev/null)
svc 1 cluster join-token revoke "$(cut -d. -f3 <<<"$revoked")" >/dev/null
# Made last: making a token drops those expired by then, and this one
# expires within a second.
expired=$(svc 1 cluster join-token create --ttl 1s 2>/dev/null)
token_expired() { svc 1 cluster join-token list | grep -q "$(cut -d. -f3 <<<"$expired").*Expired"; }
check "a 1 s join token expires" poll 10 token_expired
check "a host with no token is refused" rogue_join rogue-a "" "not a peer of any cluster"
check "a host with an expired token is refused" rogue_join rogue-b "$expired" "expired"
check "a host with a revoked token is refused" rogue_join rogue-c "$revoked" "was revoked"
peer1_logged() { grep -q "refused a join" "$SVC_LOCAL_DIR/peer-1.log"; }
check "the peer the hosts asked logs the refusals" peer1_logged
still_three() { [ "$(svc 1 cluster info -o json | grep -c '"raft"')" -eq 3 ] && three_ready && ! svc 1 node list | grep -q rogue; }
check "no rogue is a node or a Raft server" still_three
rogue_down

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
