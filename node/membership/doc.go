// Package membership is the peer's part in who belongs to the cluster: it
// forms a new cluster's identity (its CA, secret and keys) or joins one
// with a join token, admits the hosts that present a token, keeps the
// peer's trust set and gossip keys in step with the replicated state,
// renews the peer's certificate before it expires, makes and revokes join
// tokens, removes peers, and rotates the gossip key. The cryptography and
// the wire protocol are package fabric's.
package membership
