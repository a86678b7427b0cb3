// Package auth makes and checks the cluster's bearer tokens: JWTs signed with
// EdDSA by a key that lives in the replicated state, so every peer verifies
// locally, with no call to the leader. A token names its subject and kind
// (user, service account or peer), the user's role or the service account's
// namespace, and when it was issued and expires. It is void once expired, or
// once its user or service account is removed. Verifiers are chosen by the
// token's issuer, so a second issuer (an OpenID Connect provider) can be
// added beside the cluster's own.
//
// Seal and Unseal keep secrets (registry passwords) in the replicated state
// encrypted with a key derived from the same seed.
package auth
