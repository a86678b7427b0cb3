#!/usr/bin/env bash
# Starts (up) or stops (down) a single-peer svc cluster on loopback for trying
# svc out. The peer runs in the background; its data and log live in .dev/.
#   scripts/dev.sh up     # used by 'make run'
#   scripts/dev.sh down   # used by 'make stop'
# It uploads build/mini-linux.qcow2 (make image) as image mini-linux.
# Settings: SVC_DEV_API_PORT (default 8080), SVC_DEV_DIR (default .dev).
# 'svc agent --dev' offers 4 vCPUs per CPU (--cpu-overcommit), so that a small
# machine runs the default 3-CPU VM.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=bin/svc
dir=${SVC_DEV_DIR:-.dev}
port=${SVC_DEV_API_PORT:-8080}
url=http://127.0.0.1:$port
pidfile=$dir/agent.pid

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

case ${1:-} in
up)
  mkdir -p "$dir"
  if running; then
    echo "a dev peer is already running (pid $(cat "$pidfile"))"
  else
    setsid "$bin" agent --dev --data-dir "$dir/data" --api-port "$port" \
      --raft-port "${SVC_DEV_RAFT_PORT:-7000}" --gossip-port "${SVC_DEV_GOSSIP_PORT:-7946}" \
      >"$dir/agent.out" 2>"$dir/agent.log" </dev/null &
    echo $! >"$pidfile"
  fi
  # Wait (bounded) for the peer to lead, write its admin token, and be READY.
  token_file=$dir/data/admin.token
  for _ in $(seq 1 120); do
    if ! running; then
      echo "the dev peer exited; its log:" >&2
      tail -n 20 "$dir/agent.log" >&2
      exit 1
    fi
    if [ -s "$token_file" ]; then
      export SVC_TOKEN=$(cat "$token_file")
      if "$bin" --api-url "$url" node list 2>/dev/null | grep -qw READY; then
        break
      fi
    fi
    sleep 0.5
  done
  [ -s "$token_file" ] || { echo "the dev peer wrote no admin token in 60 s; see $dir/agent.log" >&2; exit 1; }
  export SVC_TOKEN=$(cat "$token_file")
  if ! "$bin" --api-url "$url" node list | grep -qw READY; then
    echo "the dev peer did not become ready in 60 s (the node says why; see also $dir/agent.log):" >&2
    "$bin" --api-url "$url" node list -o yaml >&2 || true
    exit 1
  fi
  if ! "$bin" --api-url "$url" image list | grep -q '^mini-linux '; then
    "$bin" --api-url "$url" image upload build/mini-linux.qcow2 --name mini-linux -q
  fi
  cat <<MSG
svc is running: a single-peer cluster on this machine.
  admin token: $SVC_TOKEN
  API:    $url   (cluster info: $url/api/v1/cluster-info, metrics: $url/metrics)
  log:    $dir/agent.log
  stop:   make stop

Use the CLI (the admin token in $token_file is valid for 24 h;
make a new one with: bin/svc admin token --data-dir $dir/data --user admin --admin):
  export SVC_API_URL=$url     # or: bin/svc config set --api-url $url
  export SVC_TOKEN=\$(cat $token_file)   # or: bin/svc user set-token TOKEN
  bin/svc cluster info
  bin/svc node list
  bin/svc vm deploy --image mini-linux     # prints the ssh and vnc addresses
  ssh admin@127.0.0.1 -p SSH_PORT           # password: admin
MSG
  ;;
down)
  if running; then
    kill "$(cat "$pidfile")"
    for _ in $(seq 1 50); do running || break; sleep 0.2; done
    echo "dev peer stopped"
  else
    echo "no dev peer is running"
  fi
  rm -f "$pidfile"
  ;;
*)
  echo "usage: $0 up|down" >&2
  exit 2
  ;;
esac
