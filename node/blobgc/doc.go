// Package blobgc removes the image blobs a peer no longer needs and keeps
// the cluster's record of what the peer holds true: blobs no image, ISO or
// VM of the cluster references (after a grace, so that a blob on its way to
// a record is not taken), blobs the cluster no longer lists on this node (a
// cache freed), the hypervisor's own copies of removed blobs, and the
// partial disks of pulls nobody resumed. It runs only on a replica that has
// caught up: a stale one would take the blob of a recent image for an
// orphan.
package blobgc
