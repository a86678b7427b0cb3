// Package swarm spreads a blob to the peers that need it, peer to peer, in
// chunks: every peer that holds a chunk, whole blob or part of one, is a
// source for the others, so that a fleet gets an image in about the time of
// one copy and the blob's origin (its first holder, or its registry) sends
// it about once.
//
// A blob's plan lists its chunks (offset, size, sha256), cut by its first
// holder (or a registry's manifest) and served by every holder, so that
// each chunk is checked before it is kept or served on. The Raft leader
// runs a tracker: each fetching peer tells it, a few times a second, which
// chunks it has, and hears which chunks the others have; a chunk nobody
// has yet is claimed at the tracker before it is read from the origin, so
// that the origin sends it once. A fetch writes into the store's partial
// disk (resumable after a crash), sparse, and the whole blob is checked
// against its digest before it is committed. A peer bounds the chunks it
// serves at once (Config.MaxUploads); a peer that serves a bad chunk is no
// longer asked for that blob.
package swarm
