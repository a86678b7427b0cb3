// Package ocidisk moves disks (VM images and ISOs) through OCI registries.
//
// A disk in a registry is an OCI image manifest whose config blob
// (MediaTypeConfig) describes the disk (kind, arch, virtual size, the sha256
// of the whole uncompressed disk, description, hints) and whose layers are
// the disk cut into fixed-size chunks, each compressed with zstd
// (MediaTypeChunk) and annotated with its offset, uncompressed size and
// uncompressed digest. Chunks of zeros are left out: a puller writes the disk
// sparse. Equal chunks have equal digests, so a push sends only the chunks a
// registry lacks and a pull fetches only those the peer does not already
// hold. docs/registry.md documents the format.
//
// Pull also reads KubeVirt "containerDisk" images: a qcow2 or raw file under
// /disk/ in a tar layer.
package ocidisk
