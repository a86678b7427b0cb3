// Package backup is the file a cluster snapshot travels in (svc cluster
// snapshot save, restore and inspect; svc agent --restore): a header line
// (the cluster, the Raft index and term it was taken at, when, by which
// svc), the replicated state as the peers' own Raft snapshots hold it, and a
// SHA-256 of both, so that a cut or altered file is refused before anything
// is restored from it. It holds the cluster secret (which unwraps the CA
// key, the token signing key and sealed passwords): whoever has the file has
// the cluster, so it is written 0600 and kept as a secret.
package backup
