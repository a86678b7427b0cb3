#!/usr/bin/env bash
# Brings an svc cluster up on real hosts over SSH: copies the svc binary,
# installs a service running 'svc agent' on each host (a systemd unit on
# Linux, a launchd daemon on macOS). The first host forms the cluster
# (--bootstrap-expect 1: its CA and keys); the script then takes a join
# token from it (through its admin socket) and every other host joins with
# it (kept in a root-only environment file, never on a command line).
#
#   scripts/bootstrap-cluster.sh [-u USER] [-b BINARY] [-m MAC_BINARY] [-d DATA_DIR] [-p PORT] [-e ARGS] HOST...
#
# HOST is the address each peer binds to and advertises (the host's address
# on the cluster's private network). The first host forms the cluster; the
# others join it. Run it again with more hosts to add them (the first host
# listed must be a peer of the cluster): peers already running keep their
# data and identity, and need no token.
#   -u USER      SSH user with sudo rights (default: root)
#   -b BINARY    svc binary for Linux hosts (default: bin/svc; build with 'make build')
#   -m MAC_BINARY svc binary for macOS hosts, built and signed on a Mac
#                (default: bin/svc-darwin; 'make build sign' on the Mac, see docs/macos.md)
#   -d DATA_DIR  data dir on the hosts (default: /var/lib/svc)
#   -p PORT      API port (default: 8080)
#   -e ARGS      extra 'svc agent' arguments for every host (e.g. "--memory 64G")
# Needs: ssh and scp access to every host; systemd on Linux hosts.
set -euo pipefail
cd "$(dirname "$0")/.."
user=root bin=bin/svc macbin=bin/svc-darwin data=/var/lib/svc port=8080 extra=""
while getopts "u:b:m:d:p:e:h" opt; do
  case $opt in
  u) user=$OPTARG ;;
  b) bin=$OPTARG ;;
  m) macbin=$OPTARG ;;
  d) data=$OPTARG ;;
  p) port=$OPTARG ;;
  e) extra=$OPTARG ;;
  *) sed -n '2,23p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,23p' "$0"; exit 2; }
hosts=("$@")
first=${hosts[0]}
ssh_opts=(-o BatchMode=yes -o ConnectTimeout=10)
sudo=""
[ "$user" = root ] || sudo="sudo"

# install HOST ARGS TOKEN: install svc on HOST and (re)start its agent
# with ARGS; TOKEN (may be empty) is handed to it in SVC_JOIN_TOKEN.
install() {
  local h=$1 args=$2 token=$3 os b
  echo "== $h: svc $args"
  os=$(ssh "${ssh_opts[@]}" "$user@$h" uname -s)
  b=$bin
  [ "$os" != Darwin ] || b=$macbin
  [ -x "$b" ] || { echo "no svc binary for $os at $b: 'make build' (Linux), 'make build sign' on a Mac (docs/macos.md)" >&2; exit 1; }
  scp "${ssh_opts[@]}" "$b" "$user@$h:/tmp/svc.new"
  ssh "${ssh_opts[@]}" "$user@$h" "$sudo sh -c 'install -m 0755 /tmp/svc.new /usr/local/bin/svc && rm -f /tmp/svc.new && mkdir -p $data && chmod 0711 $data && mkdir -p /etc/svc && chmod 0700 /etc/svc'"
  # The join token reaches the host on ssh's stdin, into a root-only file.
  printf 'SVC_JOIN_TOKEN=%s\n' "$token" | ssh "${ssh_opts[@]}" "$user@$h" "$sudo sh -c 'umask 077 && cat >/etc/svc/join.env'"
  if [ "$os" = Darwin ]; then
    ssh "${ssh_opts[@]}" "$user@$h" "$sudo sh -s" <<PLIST
set -e
args="$args"
token=\$(sed -n 's/^SVC_JOIN_TOKEN=//p' /etc/svc/join.env)
{
  echo '<?xml version="1.0" encoding="UTF-8"?>'
  echo '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">'
  echo '<plist version="1.0"><dict>'
  echo '<key>Label</key><string>dev.svc.agent</string>'
  echo '<key>ProgramArguments</key><array><string>/usr/local/bin/svc</string>'
  for a in \$args; do echo "<string>\$a</string>"; done
  echo '</array>'
  echo "<key>EnvironmentVariables</key><dict><key>SVC_JOIN_TOKEN</key><string>\$token</string></dict>"
  echo '<key>RunAtLoad</key><true/><key>KeepAlive</key><true/>'
  echo '<key>SoftResourceLimits</key><dict><key>NumberOfFiles</key><integer>65536</integer></dict>'
  echo '<key>StandardErrorPath</key><string>/var/log/svc-agent.log</string>'
  echo '</dict></plist>'
} >/Library/LaunchDaemons/dev.svc.agent.plist
chmod 600 /Library/LaunchDaemons/dev.svc.agent.plist
launchctl bootout system/dev.svc.agent 2>/dev/null || true
launchctl bootstrap system /Library/LaunchDaemons/dev.svc.agent.plist
PLIST
    return
  fi
  ssh "${ssh_opts[@]}" "$user@$h" "$sudo sh -s" <<UNIT
set -e
cat >/etc/systemd/system/svc-agent.service <<'EOF_UNIT'
[Unit]
Description=svc agent (VM hosting cluster peer)
After=network-online.target
Wants=network-online.target

[Service]
EnvironmentFile=/etc/svc/join.env
ExecStart=/usr/local/bin/svc $args
Restart=always
RestartSec=2
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
EOF_UNIT
systemctl daemon-reload
systemctl enable svc-agent.service >/dev/null
systemctl restart svc-agent.service
UNIT
}

with_extra() { if [ -z "$extra" ]; then echo "$1"; else echo "$1 $extra"; fi; }

# The first host forms the cluster (or, on a run that adds hosts, is a peer
# of it already: its data dir wins over --bootstrap-expect).
install "$first" "$(with_extra "agent --bind $first --data-dir $data --api-port $port --bootstrap-expect 1")" ""
token=""
if [ ${#hosts[@]} -gt 1 ]; then
  echo "== a join token from $first for ${#hosts[@]} hosts (up to 120 s)"
  for _ in $(seq 1 120); do
    if token=$(ssh "${ssh_opts[@]}" "$user@$first" "$sudo sh -c 'SVC_TOKEN=\$(/usr/local/bin/svc admin token --data-dir $data --user admin --admin) /usr/local/bin/svc --api-url http://$first:$port cluster join-token create --uses $((${#hosts[@]} - 1)) --ttl 1h --auto-approve'" 2>/dev/null) && [ -n "$token" ]; then
      break
    fi
    sleep 1
  done
  [ -n "$token" ] || { echo "$first made no join token in 120 s; check 'journalctl -u svc-agent' there" >&2; exit 1; }
fi
for h in "${hosts[@]:1}"; do
  install "$h" "$(with_extra "agent --bind $h --data-dir $data --api-port $port --join $first:7946")" "$token"
done

echo "== waiting for the cluster to form (up to 120 s)"
for _ in $(seq 1 120); do
  if out=$(ssh "${ssh_opts[@]}" "$user@$first" "$sudo sh -c 'SVC_TOKEN=\$(/usr/local/bin/svc admin token --data-dir $data --user admin --admin) /usr/local/bin/svc --api-url http://$first:$port node list'" 2>/dev/null) &&
    [ "$(grep -c ' READY ' <<<"$out")" -eq "${#hosts[@]}" ]; then
    echo "$out"
    echo
    echo "The cluster is up. Point the CLI at any peer, with an admin token from a peer's host:"
    echo "  svc config set --api-url http://$first:$port"
    echo "  svc user set-token \$(ssh $user@$first sudo svc admin token --data-dir $data --user admin --admin)"
    exit 0
  fi
  sleep 1
done
echo "the cluster did not report ${#hosts[@]} READY nodes in 120 s; check 'journalctl -u svc-agent' (Linux) or /var/log/svc-agent.log (macOS) on the hosts" >&2
exit 1
