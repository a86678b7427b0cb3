#!/usr/bin/env bash
# Builds the 9p file system modules (9pnet, 9pnet_virtio, 9p) for Debian's
# cloud kernel, which leaves them out: mini-linux mounts a VM's shared folder
# (virtio-9p) with them. Built out of tree from Debian's own packages of the
# same version (linux-source, the kernel's headers and kbuild), so that their
# vermagic and symbol versions are the kernel's; kept in the cache.
#   9p-modules.sh KERNEL_DEB CACHE_DIR OUT_DIR
set -euo pipefail
deb=$1 cache=$2 out=$3
name=$(basename "$deb")                # linux-image-6.1.0-56-cloud-amd64_6.1.192-2_amd64.deb
kver=${name#linux-image-}; kver=${kver%%_*} # 6.1.0-56-cloud-amd64
pkgver=${name#*_}; pkgver=${pkgver%%_*}     # 6.1.192-2
abi=${kver%-cloud-amd64}                    # 6.1.0-56
series=$(echo "$abi" | cut -d. -f1,2)       # 6.1
built="$cache/9p-$kver"
if [ -f "$built/9p.ko" ]; then
  mkdir -p "$out" && cp "$built"/*.ko "$out/"
  exit 0
fi
for tool in gcc make xz; do
  command -v "$tool" >/dev/null || { echo "9p-modules.sh: $tool is missing: run scripts/install-deps.sh" >&2; exit 1; }
done
# The headers are the kernel's own ABI: only the kernel's version will do.
# The archive keeps one version of the series' kbuild tools and a few of its
# source, and may already carry a newer Debian revision of them than of the
# kernel (6.1.192-3 beside the kernel's 6.1.192-2): when the kernel's own is
# gone, take the newest of the same upstream release (6.1.192).
upstream=${pkgver%-*}
pkgs=("linux-headers-$kver" "linux-headers-$abi-common" "linux-kbuild-$series" "linux-source-$series")
debs=()
for p in "${pkgs[@]}"; do
  versions=("$pkgver")
  case $p in
  linux-kbuild-* | linux-source-*)
    while read -r v; do
      [ "$v" != "$pkgver" ] && versions+=("$v")
    done < <(apt-cache madison "$p" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}' | grep -F "$upstream-" | sort -rV)
    ;;
  esac
  found=
  for v in "${versions[@]}"; do
    f=$(ls "$cache/${p}_${v}_"*.deb 2>/dev/null | head -n1 || true)
    if [ -z "$f" ] && (cd "$cache" && apt-get download -qq "$p=$v" >/dev/null 2>&1); then
      f=$(ls "$cache/${p}_${v}_"*.deb | head -n1)
    fi
    if [ -n "$f" ]; then
      found=$f
      break
    fi
  done
  [ -n "$found" ] || { echo "9p-modules.sh: cannot download $p of $upstream (tried ${versions[*]}; run apt-get update)" >&2; exit 1; }
  debs+=("$found")
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "${debs[@]}"; do
  dpkg-deb -x "$f" "$work/x"
done
hdr="$work/x/usr/src/linux-headers-$kver"
# The headers' Makefile names the common headers by their installed path.
sed -i "s#/usr/src/linux-headers-$abi-common#$work/x/usr/src/linux-headers-$abi-common#" "$hdr/Makefile"
# The source tarball is in blocks: xz unpacks them on every core.
xz -T0 -dc "$work/x/usr/src/linux-source-$series.tar.xz" | tar -x -C "$work" "linux-source-$series/fs/9p" "linux-source-$series/net/9p"
src="$work/m"
mkdir -p "$src"
cp "$work/linux-source-$series"/fs/9p/*.[ch] "$work/linux-source-$series"/net/9p/*.[ch] "$src/"
# The objects of fs/9p and net/9p's Makefiles, without the options the
# modules do without (fscache, POSIX ACLs; the fd, Xen and RDMA transports).
cat >"$src/Kbuild" <<'KBUILD'
obj-m := 9pnet.o 9pnet_virtio.o 9p.o
9pnet-objs := mod.o client.o error.o protocol.o trans_common.o
9pnet_virtio-objs := trans_virtio.o
9p-objs := vfs_super.o vfs_inode.o vfs_inode_dotl.o vfs_addr.o vfs_file.o vfs_dir.o vfs_dentry.o v9fs.o fid.o xattr.o
KBUILD
make -s -j"$(nproc)" -C "$hdr" M="$src" modules >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
mkdir -p "$built.tmp" "$out"
cp "$src"/9pnet.ko "$src"/9pnet_virtio.ko "$src"/9p.ko "$built.tmp/"
rm -rf "$built" && mv "$built.tmp" "$built"
cp "$built"/*.ko "$out/"
