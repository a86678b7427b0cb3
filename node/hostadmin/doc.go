// Package hostadmin is what root on a peer's host may do without a token:
// through the peer's admin socket (a unix socket in the data dir, mode
// 0600, never on the network) mint a personal token for a user, recording
// the user the first time, and remove a user, whose tokens every peer then
// refuses. The first peer of a new cluster also writes an admin token
// (admin.token, 0600) into its data dir for whoever sets the cluster up.
// `svc admin token` and `svc admin remove-user` are its clients.
package hostadmin
