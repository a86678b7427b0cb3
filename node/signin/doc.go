// Package signin lets people sign in through their organisation's OpenID
// Connect provider: it starts the authorization code flow with PKCE (RFC
// 7636) for a browser, or the device authorization grant (RFC 8628) for a
// host without one, redeems the provider's answer with the client secret
// the cluster keeps sealed, and verifies the ID token (issuer, audience,
// expiry, signature, and the nonce of the sign-in it started) with
// coreos/go-oidc, which fetches the provider's discovery document and keys
// and follows their rotation. What it returns is who the person is, their
// groups and whether the provider's configuration makes them an admin or
// lets them in at all; recording them and minting their token is the API's.
//
// A sign-in keeps no state on the peers: the nonce, the PKCE verifier and
// the redirect address travel in the OAuth state, sealed with a key of the
// cluster (so any peer can finish what another started, and nobody can
// forge or alter one), and expire after ten minutes.
package signin
