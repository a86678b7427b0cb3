#!/usr/bin/env bash
# Builds mini-linux, the svc default guest image, from Debian packages only:
# a whole-disk FAT file system booted by SYSLINUX, holding Debian's cloud
# kernel and an initramfs of busybox (init, udhcpc, acpid), dropbear (SSH),
# QEMU's guest agent (qemu-ga, on the virtio-serial channel the domain has) and
# svc's identity step (/usr/lib/svc/identity, the static Go program in
# identity/, which also makes the machine id and SSH host keys at boot), with
# user admin / password admin; the disk also holds the test stand-in for
# GitHub's actions runner (ghrunner, from ghrunner/: it speaks only to svc's
# GitHub stand-in, testkit/githubapi), which the boot links at
# /usr/lib/svc/ghrunner: kept out of the initramfs, its 6 MB cost every
# boot nothing (SYSLINUX reads the initramfs through the BIOS, the kernel
# unpacks it: under emulation 0.45 s a boot for those 6 MB). The result is a small qcow2, and the same
# kernel and initramfs as a bootable ISO 9660 image (ISOLINUX), the installer
# CD-ROM of the ISO path: booted with an empty disk, it gives that disk to admin.
#   scripts/mini-linux/build.sh [OUT [ISO]]
#   (default build/mini-linux.qcow2 and build/mini-linux.iso)
# Needs: busybox-static dropbear-bin qemu-guest-agent syslinux syslinux-common isolinux mtools
# dosfstools genisoimage qemu-utils cpio zstd binutils kmod openssl (scripts/install-deps.sh
# installs them), and Go ($GO, default go).
# The kernel package is downloaded once into build/cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-build/mini-linux.qcow2}
iso=${2:-${out%.qcow2}.iso}
isolinux=/usr/lib/ISOLINUX/isolinux.bin
ldlinux=/usr/lib/syslinux/modules/bios/ldlinux.c32
cache=${SVC_IMAGE_CACHE:-build/cache}
disk_mib=${MINI_LINUX_DISK_MIB:-64}
# The kernel modules, in the groups rcS loads them by, in order (each with
# what it depends on, a module in the first group that needs it): early
# (virtio, the disk's file system), ide (IDE and CD-ROM), 9p only when the VM
# has a shared folder, late (ACPI's power button, for acpid).
mod_groups="early ide 9p late"
mods_early="virtio_pci virtio_blk virtio_net virtio_console virtio_rng vfat nls_cp437 nls_ascii nls_iso8859-1"
mods_ide="ata_piix sd_mod sr_mod isofs"
mods_9p="netfs"
mods_late="evdev button"

go=${GO:-go}
for tool in mkfs.vfat syslinux mcopy genisoimage qemu-img cpio zstd strip depmod modprobe openssl dpkg-deb "$go"; do
  command -v "$tool" >/dev/null || { echo "build.sh: $tool is missing: run scripts/install-deps.sh" >&2; exit 1; }
done
busybox=/bin/busybox
for f in "$isolinux" "$ldlinux"; do
  [ -f "$f" ] || { echo "build.sh: $f is missing: run scripts/install-deps.sh" >&2; exit 1; }
done
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' || { echo "build.sh: $busybox must be busybox-static" >&2; exit 1; }

mkdir -p "$cache" "$(dirname "$out")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Kernel: Debian's cloud kernel (LZ4-compressed, quick to boot under emulation).
kpkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$kpkg" ]; then
  # No package lists: use what the cache has.
  kpkg=$(ls "$cache"/linux-image-*-cloud-amd64_*.deb 2>/dev/null | sed 's#.*/##; s#_.*##' | sort -V | tail -n1)
fi
[ -n "$kpkg" ] || { echo "build.sh: cannot find the cloud kernel package (run apt-get update)" >&2; exit 1; }
deb=$(ls "$cache/${kpkg}"_*.deb 2>/dev/null | head -n1 || true)
if [ -z "$deb" ]; then
  (cd "$cache" && apt-get download -qq "$kpkg" >/dev/null 2>&1)
  deb=$(ls "$cache/${kpkg}"_*.deb | head -n1)
fi
kver=${kpkg#linux-image-}
dpkg-deb -x "$deb" "$work/k"
depmod -b "$work/k" "$kver"

# Root file system of the initramfs.
r=$work/root
mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,etc/dropbear,proc,sys,dev,tmp,run,var/log,root,home/admin,data,lib/modules}
cp -a "$here/rootfs/." "$r/"
cp "$busybox" "$r/bin/busybox"
for applet in $("$busybox" --list-full); do
  [ -e "$r/$applet" ] || ln -s /bin/busybox "$r/$applet"
done
ln -s /bin/busybox "$r/init"
# dropbear (SSH) and QEMU's guest agent, with the libraries they link.
cp /usr/sbin/dropbear "$r/usr/sbin/dropbear"
cp /usr/sbin/qemu-ga "$r/usr/sbin/qemu-ga"
for lib in $( (ldd /usr/sbin/dropbear; ldd /usr/sbin/qemu-ga) | grep -o '/[^ ]*' | sort -u); do
  cp --parents -L "$lib" "$r"
done
: >"$work/modules.seen"
for g in $mod_groups; do
  eval "wanted=\$mods_$g"
  : >"$r/etc/modules.$g"
  for m in $wanted; do
    modprobe -d "$work/k" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
  done | while read -r ko; do
    grep -qxF "$ko" "$work/modules.seen" && continue
    echo "$ko" >>"$work/modules.seen"
    cp "$ko" "$r/lib/modules/"
    basename "$ko" >>"$r/etc/modules.$g"
  done
done
# The 9p modules the cloud kernel lacks (a VM's shared folder), after netfs;
# built here, so without the debugging sections a module build keeps (4 MB).
"$here/9p-modules.sh" "$deb" "$cache" "$work/9p"
for m in 9pnet 9pnet_virtio 9p; do
  strip --strip-debug -o "$r/lib/modules/$m.ko" "$work/9p/$m.ko"
  echo "$m.ko" >>"$r/etc/modules.9p"
done
# The identity step: static, for the guest's architecture (amd64); and the
# runner stand-in of the runner pools' end-to-end tests, for the disk.
# After the kernel's part: beside make run's build of svc, the standard
# library is compiled by then, in the build cache they share (-trimpath).
mkdir -p "$r/usr/lib/svc"
(cd "$here" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 "$go" build -trimpath -ldflags='-s -w' -o "$r/usr/lib/svc/identity" ./identity)
(cd "$here" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 "$go" build -trimpath -ldflags='-s -w' -o "$work/ghrunner" ./ghrunner)
hash=$(openssl passwd -6 -salt svcminilinux admin)
printf 'root:x:0:0:root:/root:/bin/sh\nadmin:x:1000:1000:admin:/home/admin:/bin/sh\n' >"$r/etc/passwd"
printf 'root:*:19000:0:99999:7:::\nadmin:%s:19000:0:99999:7:::\n' "$hash" >"$r/etc/shadow"
chmod 600 "$r/etc/shadow"
printf 'root:x:0:\nadmin:x:1000:\n' >"$r/etc/group"
chown 1000:1000 "$r/home/admin"
# zstd: the kernel unpacks it in a fraction of gzip's time under emulation
# (the unpacking was 0.9 s of the boot with gzip), and it is the smaller file
# for SYSLINUX to read through the BIOS.
(cd "$r" && find . | LC_ALL=C sort | cpio --quiet -o -H newc --reproducible) | zstd -19 -q >"$work/initrd.img"

cat >"$work/syslinux.cfg" <<'CFG'
DEFAULT linux
PROMPT 0
TIMEOUT 0
LABEL linux
  KERNEL /vmlinuz
  INITRD /initrd.img
  APPEND console=ttyS0,115200 console=tty0 quiet cryptomgr.notests no_timer_check
CFG
# cryptomgr.notests: the kernel's self-tests of its crypto algorithms took
# 0.25 s of every boot under emulation. no_timer_check: the kernel checks at
# boot that the IO-APIC's timer interrupt arrives within a few ticks, and a
# virtual CPU starved by a busy host misses them: "Kernel panic - not
# syncing: IO-APIC + timer doesn't work!" (a make test under load, TCG);
# cloud images boot with it for the same reason. (pci=noacpi, which saved 0.7 s of
# the modules' load, the kernel running ACPI's interrupt links for 0.2 s at
# each PCI device's probe, left the IDE controller without its resources:
# no disk for legacyIO VMs.)

# Whole-disk FAT (no partition table) with SYSLINUX's boot sector.
raw=$work/disk.raw
mkfs.vfat -C -n MINILINUX "$raw" $((disk_mib * 1024)) >/dev/null
syslinux --install "$raw"
mcopy -i "$raw" "$work/k/boot/vmlinuz-$kver" ::/vmlinuz
mcopy -i "$raw" "$work/initrd.img" ::/initrd.img
mcopy -i "$raw" "$work/syslinux.cfg" ::/syslinux.cfg
echo "files here live on the VM's disk" >"$work/README.txt"
mcopy -i "$raw" "$work/README.txt" ::/README.txt
mcopy -i "$raw" "$work/ghrunner" ::/ghrunner
# Not compressed: SYSLINUX reads the kernel and initramfs through the BIOS in
# small requests, and QEMU inflates a whole compressed cluster for each (the
# boot loaded them 0.5 s sooner from plain clusters, for 3 MB more image).
qemu-img convert -O qcow2 "$raw" "$out.tmp"
mv "$out.tmp" "$out"
echo "built $out ($(du -h "$out" | cut -f1), kernel $kver)"

# The installer CD-ROM: the same kernel and initramfs, booted by ISOLINUX.
cd_dir=$work/cd
mkdir -p "$cd_dir/isolinux"
cp "$isolinux" "$ldlinux" "$cd_dir/isolinux/"
cp "$work/k/boot/vmlinuz-$kver" "$cd_dir/vmlinuz"
cp "$work/initrd.img" "$cd_dir/initrd.img"
sed 's/^  APPEND /  APPEND mini-linux.from=cdrom /' "$work/syslinux.cfg" >"$cd_dir/isolinux/isolinux.cfg"
genisoimage -quiet -V MINILINUX -J -r -o "$iso.tmp" \
  -b isolinux/isolinux.bin -c isolinux/boot.cat -no-emul-boot -boot-load-size 4 -boot-info-table "$cd_dir"
mv "$iso.tmp" "$iso"
echo "built $iso ($(du -h "$iso" | cut -f1))"
