// Package imagestore keeps disk images on this peer as content-addressed
// blobs (sha256), streams them in (uploads) and out (downloads), and fetches
// a blob this peer lacks from a peer that has it, verifying the digest and
// leaving no partial file behind. A registry pull writes into a partial
// disk (Partial), kept apart from the blobs, so that an interrupted pull can
// be resumed. Cluster metadata (which image name points to which digest,
// which peers hold it) lives in the replicated state.
package imagestore
