#!/usr/bin/env bash
# Installs the Debian packages svc needs on a host, where they are missing:
# libvirt + QEMU to run VMs, what scripts/mini-linux/build.sh builds the
# default guest image with (QEMU's guest agent among it), and iproute2 + nftables for clusters in network
# namespaces (the chaos runs cut peers off with nft), and Debian's registry
# server (distribution 2.8) that the registry tests push to and pull from,
# Chromium, which the browser tests of the API explorer drive headless, and
# e2fsprogs and mount, which keep the namespaces' shared folders (ext4 images
# on loop devices), and gcc, make and xz-utils, with which the image build
# compiles the 9p modules Debian's cloud kernel leaves out (binutils strips
# them), and zstd, which packs the initramfs.
# Idempotent; needs root.
#   scripts/install-deps.sh       # everything, the tests' too (make test)
#   scripts/install-deps.sh run   # what running a peer and building its image need (make run):
#                                 # not the registry server or Chromium, which only tests use
set -euo pipefail
pkgs=(
  qemu-system-x86 qemu-utils libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients
  busybox-static dropbear-bin qemu-guest-agent syslinux syslinux-common isolinux mtools dosfstools cpio zstd kmod openssl file genisoimage
  iproute2 nftables
  e2fsprogs mount gcc make xz-utils binutils
)
case ${1:-all} in
run) ;;
all) pkgs+=(docker-registry chromium) ;;
*) echo "usage: $0 [run|all]" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The image build reads the kernel package's name from the package lists.
lists=$(find /var/lib/apt/lists -name '*Packages*' 2>/dev/null | head -n1)
if [ ${#missing[@]} -eq 0 ] && [ -n "$lists" ]; then
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "install-deps.sh: needs root to install: ${missing[*]}" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
