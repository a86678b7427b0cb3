// Package standing keeps a peer's place in its cluster known to it.
//
// A removed peer must not run on: the leader drops its connections at
// once, so its replica may never apply its own removal. A Keeper asks the
// peers it knows whether it may come back when it restarts (Check), and
// again whenever it knows no leader while it runs; a refusal stops it.
//
// A peer that was down while others were admitted refuses their
// connections (their certificates name peers its trust set lacks), and
// its replica, which would tell it, may depend on one of them: when a
// refusal names an unknown peer it asks the peers it knows for their trust
// set and takes a newer one (RefreshTrustSoon).
package standing
