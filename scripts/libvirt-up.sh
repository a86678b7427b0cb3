#!/usr/bin/env bash
# Makes sure libvirtd and virtlogd run on this host, and starts them where
# they do not (no systemd needed): the QEMU driver's users and groups, then
# both daemons in the background. Waits (at most 60 s) until libvirtd
# answers. Idempotent; needs root. Logs: /var/log/libvirt/.
# QEMU runs as the unprivileged libvirt-qemu user: svc pins it in every
# domain it defines, and this script leaves qemu.conf's default (Debian's:
# libvirt-qemu) in place, undoing the root user earlier versions set.
set -euo pipefail
sock=/var/run/libvirt/libvirt-sock
# A libvirtd that hangs (stuck on a domain left from a host that stopped
# mid-run) must not hang this script: each probe has 10 s.
answers() { timeout 10 virsh -c qemu:///system version >/dev/null 2>&1; }
# What udev does on a Debian host: /dev/kvm belongs to group kvm, mode 0660.
# Without it (no udev here), QEMU's user cannot open /dev/kvm, and libvirt
# probes QEMU again at every call (4 s each) because its capabilities said
# otherwise.
kvm_dev() {
  [ -c /dev/kvm ] && [ "$(id -u)" -eq 0 ] || return 0
  [ "$(stat -c %G:%a /dev/kvm)" = kvm:660 ] && return 0
  getent group kvm >/dev/null || groupadd -r kvm
  chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
}
kvm_dev
if answers; then exit 0; fi
[ "$(id -u)" -eq 0 ] || { echo "libvirt-up.sh: needs root" >&2; exit 1; }
command -v libvirtd >/dev/null || { echo "libvirt-up.sh: libvirtd is not installed: run scripts/install-deps.sh" >&2; exit 1; }

getent group kvm >/dev/null || groupadd -r kvm
getent group libvirt-qemu >/dev/null || groupadd -r libvirt-qemu
getent passwd libvirt-qemu >/dev/null || useradd -r -g libvirt-qemu -G kvm -d /var/lib/libvirt -s /usr/sbin/nologin libvirt-qemu
conf=/etc/libvirt/qemu.conf
if [ -f "$conf" ]; then
  sed -i '/^user = "root"$/d; /^group = "root"$/d' "$conf"
fi
mkdir -p /var/log/libvirt /var/run/libvirt /var/lib/libvirt

if ! pgrep -x virtlogd >/dev/null; then
  setsid virtlogd >>/var/log/libvirt/virtlogd.out 2>&1 </dev/null &
fi
if ! pgrep -x libvirtd >/dev/null; then
  setsid libvirtd >>/var/log/libvirt/libvirtd.out 2>&1 </dev/null &
fi
for _ in $(seq 1 240); do
  if [ -S "$sock" ] && answers; then
    echo "libvirtd is running"
    exit 0
  fi
  sleep 0.25
done
echo "libvirt-up.sh: libvirtd did not answer within 60 s; see /var/log/libvirt/libvirtd.out" >&2
exit 1
