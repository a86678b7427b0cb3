#!/usr/bin/env bash
# Runs an svc cluster of N peers on this one machine, each peer in its own
# network namespace with its own address on a bridge, as if each were a host.
#   scripts/local-cluster.sh up N [M] # make N hosts, start the first M (default N) and join them
#                                     # (the join token lets all N join: start the rest later)
#   scripts/local-cluster.sh start I [FLAG...]  # start peer I (again, after it was stopped
#                                     # or killed, or for the first time), with more agent flags
#   scripts/local-cluster.sh down     # stop them and remove the namespaces
# Needs root and iproute2. Peers get 10.213.0.11, .12, ...; the bridge (this
# machine) is 10.213.0.1, so the API of peer i is http://10.213.0.(10+i):8080.
# Settings: SVC_LOCAL_DIR (state and logs, default /tmp/svc-local-cluster),
# SVC_BIN (default bin/svc), SVC_AGENT_ARGS (more agent flags, e.g.
# "--hypervisor fake" for runs that only pretend VMs), SVC_FORM_PEER (the
# peer that forms the cluster, which the others join; default 1). Peer i's
# process id is in $SVC_LOCAL_DIR/peer-i.pid.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${SVC_BIN:-bin/svc}")
dir=${SVC_LOCAL_DIR:-/tmp/svc-local-cluster}
bridge=svcbr0
net=10.213.0

addr() { echo "$net.$((10 + $1))"; }
# ready_count: how many nodes of 'svc node list' (on stdin) are READY.
ready_count() { awk 'NR > 1 && $2 == "READY"' | wc -l; }

down() {
  # Stop whatever runs in our namespaces (wherever its pid file lives), then
  # remove them: a namespace with a live process would keep its veth.
  local ns pids pidfile
  for pidfile in "$dir"/peer-*.pid; do
    [ -f "$pidfile" ] && { kill "$(cat "$pidfile")" 2>/dev/null || true; }
  done
  for ns in $(ip netns list | awk '/^svc-peer-[0-9]+/ {print $1}'); do
    pids=$(ip netns pids "$ns")
    [ -z "$pids" ] || kill $pids 2>/dev/null || true
  done
  for ns in $(ip netns list | awk '/^svc-peer-[0-9]+/ {print $1}'); do
    for _ in $(seq 1 50); do [ -z "$(ip netns pids "$ns")" ] && break; sleep 0.1; done
    pids=$(ip netns pids "$ns")
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    ip netns delete "$ns"
  done
  for link in $(ip -o link show | awk -F': ' '$2 ~ /^svcv[0-9]+@/ {sub(/@.*/, "", $2); print $2}'); do
    ip link delete "$link" 2>/dev/null || true
  done
  ip link show "$bridge" >/dev/null 2>&1 && ip link delete "$bridge"
  rm -rf "$dir"/peer-* "$dir"/peer-*.pid "$dir/admin.token" "$dir/join.token" "$dir/size"
  return 0
}

# start_peer I [FLAG...]: launch peer I in its namespace. Peer SVC_FORM_PEER
# (1) forms the cluster; every other peer joins it with the join token in
# $dir/join.token the first time. Its data dir is kept across starts, so a
# restart rejoins as itself, with no token and no --bootstrap-expect.
start_peer() {
  local i=$1 ip form=${SVC_FORM_PEER:-1}
  shift
  ip=$(addr "$i")
  local args=(agent --name "peer-$i" --bind "$ip" --data-dir "$dir/peer-$i/data" --cpu 2 --memory 4 --gpu 0) token=""
  if [ -f "$dir/peer-$i/data/fabric/cluster.json" ]; then
    : # a peer already: it finds its cluster from its data dir
  elif [ "$i" -eq "$form" ]; then
    args+=(--bootstrap-expect 1)
  else
    args+=(--join "$(addr "$form"):7946")
    # The token goes in the environment, not on the command line (ps shows that).
    token=$(cat "$dir/join.token")
  fi
  # shellcheck disable=SC2206 # SVC_AGENT_ARGS is split into flags on purpose
  args+=(${SVC_AGENT_ARGS:-} "$@")
  mkdir -p "$dir/peer-$i"
  SVC_JOIN_TOKEN=$token ip netns exec "svc-peer-$i" setsid "$bin" "${args[@]}" >>"$dir/peer-$i.log" 2>&1 </dev/null &
  echo $! >"$dir/peer-$i.pid"
}

# neigh_room N: room in the kernel's ARP table for N hosts that each know
# the others. The table is one for every network namespace, and its hard
# bound (gc_thresh3, 1024 by default) is for all of them together: 50
# namespaces of 50 neighbours overflow it ("neighbor table overflow" in
# dmesg), and the hosts past it cannot reach the others at all (what made
# 50 peers never form). Raised only, never lowered.
neigh_room() {
  local want=$(($1 * ($1 + 2) + 1024)) k cur
  for k in 1 2 3; do
    cur=$(cat /proc/sys/net/ipv4/neigh/default/gc_thresh$k)
    local v=$((want * k / 4))
    [ "$k" -eq 3 ] && v=$((want * 2))
    [ "$cur" -ge "$v" ] || echo "$v" >/proc/sys/net/ipv4/neigh/default/gc_thresh$k
  done
}

up() {
  local n=$1 m=${2:-$1}
  [ -x "$bin" ] || { echo "no svc binary at $bin: run 'make build'" >&2; exit 1; }
  [ "$n" -ge 1 ] 2>/dev/null || { echo "N must be a positive number" >&2; exit 2; }
  [ "$n" -le 200 ] || { echo "at most 200 peers" >&2; exit 2; }
  [ "$m" -ge 1 ] 2>/dev/null && [ "$m" -le "$n" ] || { echo "M must be between 1 and N" >&2; exit 2; }
  down
  mkdir -p "$dir"
  neigh_room "$n"
  ip link add "$bridge" type bridge
  ip addr add "$net.1/24" dev "$bridge"
  ip link set "$bridge" up
  echo "$n" >"$dir/size"
  for i in $(seq 1 "$n"); do
    local ns=svc-peer-$i ip
    ip=$(addr "$i")
    ip netns add "$ns"
    ip link add "svcv$i" type veth peer name eth0 netns "$ns"
    ip link set "svcv$i" master "$bridge" up
    ip -n "$ns" addr add "$ip/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
  done
  # Peer 1 forms the cluster. Root on its host takes an admin token from its
  # admin socket, then a join token for the other peers (bounded waits).
  start_peer 1
  local api=http://$(addr 1):8080 out=""
  for _ in $(seq 1 240); do
    if [ -z "${SVC_TOKEN:-}" ]; then
      SVC_TOKEN=$("$bin" admin token --socket "$dir/peer-1/data/admin.sock" --user admin --admin --ttl 24h 2>/dev/null || true)
      export SVC_TOKEN
      echo "$SVC_TOKEN" >"$dir/admin.token"
    fi
    if [ -n "$SVC_TOKEN" ] && "$bin" --api-url "$api" cluster join-token create --uses "$n" --ttl 1h --auto-approve >"$dir/join.token" 2>/dev/null; then
      break
    fi
    sleep 0.5
  done
  [ -s "$dir/join.token" ] || { echo "peer 1 formed no cluster in 120 s; logs are in $dir" >&2; exit 1; }
  chmod 600 "$dir/join.token"
  for i in $(seq 2 "$m"); do start_peer "$i"; done
  # Two minutes, and two seconds more a peer: a fleet of peers on a few
  # cores joins one after another.
  local waits=$((240 + 4 * m))
  for _ in $(seq 1 "$waits"); do
    out=$("$bin" --api-url "$api" node list 2>/dev/null || true)
    if [ "$(ready_count <<<"$out")" -eq "$m" ]; then
      break
    fi
    sleep 0.5
  done
  if [ "$(ready_count <<<"$out")" -ne "$m" ]; then
    echo "the cluster did not form in $((waits / 2)) s; logs are in $dir" >&2
    exit 1
  fi
  echo "$out"
  echo
  echo "$m peers are up. API of peer i: http://$net.(10+i):8080, e.g."
  echo "  export SVC_API_URL=$api"
  echo "  export SVC_TOKEN=\$(cat $dir/admin.token)   # an admin token, valid 24 h"
  echo "  $bin cluster info"
  echo "Logs: $dir/peer-*.log. Stop: $0 down"
}

[ "$(id -u)" -eq 0 ] || { echo "$0 needs root (network namespaces)" >&2; exit 1; }
case ${1:-} in
up) up "${2:-3}" "${3:-${2:-3}}" ;;
start)
  [ -f "$dir/size" ] || { echo "no local cluster is up" >&2; exit 1; }
  [ "${2:-0}" -ge 1 ] 2>/dev/null && [ "$2" -le "$(cat "$dir/size")" ] || { echo "usage: $0 start I [FLAG...] (I in 1..$(cat "$dir/size"))" >&2; exit 2; }
  shift
  start_peer "$@"
  ;;
down) down; echo "local cluster removed" ;;
*) echo "usage: $0 up [N] | start I | down" >&2; exit 2 ;;
esac
