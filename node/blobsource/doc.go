// Package blobsource gets the image blobs a VM of this node starts from: a
// blob another peer holds is fetched peer to peer (in chunks from every
// holder that has some, through package swarm, or whole from one holder of
// an earlier release), checked for what the VM uses it as (its disk, its
// ISO, its NVRAM) as if a user had uploaded it, and recorded as held here;
// a blob of a VM deployed from a registry reference that no peer can send
// is pulled from its registry. A blob in use is leased so that no
// collection takes it.
package blobsource
