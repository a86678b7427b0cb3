// Package propagate waits until a write has reached every live peer's
// replica. Some writes take effect on each peer's own replica: a removed
// user's or service account's tokens stop working on a peer once its
// replica has applied the removal (tokens are checked locally, on every
// peer). Such a write is answered once every live peer has applied it, so
// that "removed" means removed everywhere the caller can reach; a peer
// that does not show the write in time is named (cut off or slow).
package propagate
