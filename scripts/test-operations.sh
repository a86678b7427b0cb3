#!/usr/bin/env bash
# The operators' worst days, on peers that are real processes in network
# namespaces (scripts/local-cluster.sh; the fake hypervisor: the state is
# what is checked here, real VMs are peer/snapshot_test.go's and the
# libvirt tests'):
#   1. backup and restore: a snapshot saved through a follower while writes
#      go on; a namespace deleted; the snapshot restored: the namespace back
#      on every peer, the later one gone;
#   2. every host lost: all data dirs deleted; a new host forms the cluster
#      from the snapshot (--restore); the old admin token works; two new
#      hosts join with a join token;
#   3. the majority lost: two of three peers killed for good; --recover is
#      refused while a leader answers, then makes the survivor a cluster of
#      one with every acknowledged write; two new hosts join;
#   4. upgrades: the tree of SVC_UPGRADE_FROM (the commit before command
#      levels and snapshots, by default) is built; a cluster of 3 of its peers
#      takes writes while each peer in turn is replaced by this svc; every
#      acknowledged write is there; then the upgraded cluster takes a peer of
#      the old svc.
# Prints 'N passed, N failed'. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
export SVC_LOCAL_DIR=${SVC_LOCAL_DIR:-/tmp/svc-operations-test}
export SVC_CONFIG=$SVC_LOCAL_DIR/cli.json
export SVC_AGENT_ARGS="--hypervisor fake"
dir=$SVC_LOCAL_DIR
new=$(realpath bin/svc)
upgrade_from=${SVC_UPGRADE_FROM:-1a6ef52}
passed=0 failed=0
check() { # name, command...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}
api() { echo "http://10.213.0.$((10 + $1)):8080"; }
svc() { local i=$1; shift; "$new" --api-url "$(api "$i")" "$@"; }
# poll: retry a command for up to $1 seconds
poll() { local t=$1; shift; for _ in $(seq 1 $((t * 4))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done; "$@"; }
cluster() { scripts/local-cluster.sh "$@" >/dev/null; }
trap 'scripts/local-cluster.sh down >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
mkdir -p "$dir"

# stop_peer I: stop peer I's process (TERM; it hands leadership over) and wait for it.
stop_peer() {
  local pid
  pid=$(cat "$dir/peer-$1.pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}
# names I: the namespaces peer I lists (fails when it answers no list).
names() { local out; out=$(svc "$1" namespace list) && awk 'NR > 1 {print $1}' <<<"$out"; }
has_ns() { local n; n=$(names "$1") && grep -qx "$2" <<<"$n"; }
no_ns() { local n; n=$(names "$1") && ! grep -qx "$2" <<<"$n"; }
ready() { [ "$(svc "$1" node list | awk 'NR > 1 && $2 == "READY"' | wc -l)" -ge "$2" ]; }
# writer I FILE: make namespaces through peer I until FILE.stop exists,
# naming each acknowledged one in FILE.
writer() {
  local i=$1 file=$2 n=0
  : >"$file"
  while [ ! -e "$file.stop" ]; do
    n=$((n + 1))
    svc "$i" namespace create "w-$n" >/dev/null 2>&1 && echo "w-$n" >>"$file"
    sleep 0.05
  done
}
# all_there I FILE: every namespace named in FILE exists on peer I.
all_there() {
  local have
  have=$(names "$1") || return 1
  while read -r n; do grep -qx "$n" <<<"$have" || { echo "  $n missing on peer $1"; return 1; }; done <"$2"
}

echo "== 1. backup and restore"
cluster up 6 3
SVC_TOKEN=$(cat "$dir/admin.token")
export SVC_TOKEN
check "namespace team-a made" svc 1 namespace create team-a
writer 2 "$dir/w1" &
wpid=$!
sleep 1
check "snapshot saved through peer 2 while writes go on" svc 2 cluster snapshot save "$dir/c.snap"
touch "$dir/w1.stop"
wait "$wpid"
perm() { [ "$(stat -c %a "$dir/c.snap")" = 600 ]; }
check "the snapshot file is 0600" perm
check "inspect reads it whole" svc 1 cluster snapshot inspect "$dir/c.snap"
check "team-a deleted" svc 3 namespace delete team-a
check "later made" svc 3 namespace create later
check "the snapshot restored" svc 3 cluster snapshot restore "$dir/c.snap"
for i in 1 2 3; do
  check "peer $i has team-a again" poll 20 has_ns "$i" team-a
  check "peer $i no longer has later" poll 20 no_ns "$i" later
done
check "writes go on after the restore" svc 1 namespace create after-restore

echo "== 2. every host lost"
old_token=$SVC_TOKEN
for i in 1 2 3; do stop_peer "$i"; done
rm -rf "$dir"/peer-{1,2,3}/data
SVC_FORM_PEER=4 scripts/local-cluster.sh start 4 --restore "$dir/c.snap"
check "the restored cluster answers the old admin token" poll 60 has_ns 4 team-a
svc 4 cluster join-token create --uses 2 --auto-approve >"$dir/join.token" 2>/dev/null
SVC_FORM_PEER=4 scripts/local-cluster.sh start 5
SVC_FORM_PEER=4 scripts/local-cluster.sh start 6
check "two new hosts joined" poll 60 ready 4 3
check "a new host serves the restored state" poll 30 has_ns 6 team-a
voters() { [ "$(svc 4 cluster info -o json | grep -c '"raft": "\(leader\|voter\)"')" -eq 3 ]; }
check "three voters" poll 30 voters
cluster down
unset SVC_TOKEN

echo "== 3. the majority lost for good"
cluster up 5 3
SVC_TOKEN=$(cat "$dir/admin.token")
export SVC_TOKEN
writer 3 "$dir/w3" &
wpid=$!
sleep 2
touch "$dir/w3.stop"
wait "$wpid"
check "writes acknowledged" test -s "$dir/w3"
check "peer 3 has every acknowledged write" poll 10 all_there 3 "$dir/w3"
stop_peer 3
refused() {
  ip netns exec svc-peer-3 timeout 60 "$new" agent --name peer-3 --bind 10.213.0.13 --data-dir "$dir/peer-3/data" \
    --cpu 2 --memory 4 --gpu 0 --hypervisor fake --recover >"$dir/refused.log" 2>&1 && return 1
  grep -q "a leader answers" "$dir/refused.log"
}
check "--recover is refused while a leader answers" refused
scripts/local-cluster.sh start 3
check "peer 3 back" poll 30 ready 1 3
for i in 1 2; do kill -9 "$(cat "$dir/peer-$i.pid")"; done
stop_peer 3
scripts/local-cluster.sh start 3 --recover
check "the survivor leads alone" poll 60 svc 3 namespace create after-recovery
check "every acknowledged write survived" all_there 3 "$dir/w3"
svc 3 cluster join-token create --uses 2 --auto-approve >"$dir/join.token" 2>/dev/null
SVC_FORM_PEER=3 scripts/local-cluster.sh start 4
SVC_FORM_PEER=3 scripts/local-cluster.sh start 5
voters3() { [ "$(svc 3 cluster info -o json | grep -c '"raft": "\(leader\|voter\)"')" -eq 3 ]; }
check "the cluster grew back to three voters" poll 60 voters3
check "a new host has every acknowledged write" poll 30 all_there 5 "$dir/w3"
cluster down
unset SVC_TOKEN

echo "== 4. upgrades, one host at a time (from $upgrade_from)"
old=$dir/svc-old
tree=$dir/old-tree
git cat-file -e "$upgrade_from^{commit}" 2>/dev/null ||
  { echo "FAIL the tree to upgrade from: commit $upgrade_from is not in this clone (a shallow clone? fetch its history)"; exit 1; }
git worktree remove --force "$tree" >/dev/null 2>&1 || true
git worktree add --detach "$tree" "$upgrade_from" >/dev/null 2>&1
(cd "$tree" && go build -trimpath -ldflags "-X main.version=old-$upgrade_from" -o "$old" ./cmd/svc)
git worktree remove --force "$tree"
SVC_BIN=$old cluster up 4 3
SVC_TOKEN=$(cat "$dir/admin.token")
export SVC_TOKEN
writer 1 "$dir/w4" &
wpid=$!
# upgraded I: peer I answers, sees three READY nodes, and its node reports
# the new svc (the VERSION column of cluster info, which only a new peer fills).
upgraded() { ready "$1" 3 && svc "$1" cluster info | grep "^peer-$1 " | grep -vq -e "old-" -e "not reported"; }
for i in 3 2 1; do
  stop_peer "$i"
  scripts/local-cluster.sh start "$i"
  check "peer $i runs the new svc" poll 60 upgraded "$i"
done
touch "$dir/w4.stop"
wait "$wpid"
new_everywhere() { [ "$(svc 1 cluster info | grep -c "old-$upgrade_from")" -eq 0 ]; }
check "no peer runs the old svc" poll 30 new_everywhere
check "writes were acknowledged during the upgrade" test -s "$dir/w4"
for i in 1 2 3; do check "peer $i has every acknowledged write" poll 20 all_there "$i" "$dir/w4"; done
svc 1 cluster join-token create --uses 1 --auto-approve >"$dir/join.token" 2>/dev/null
SVC_BIN=$old scripts/local-cluster.sh start 4
check "the upgraded cluster takes a peer of the old svc" poll 60 ready 1 4
check "the old peer serves the state" poll 30 all_there 4 "$dir/w4"
check "a write through the old peer" svc 4 namespace create from-old

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
