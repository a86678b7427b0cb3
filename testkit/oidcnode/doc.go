// Package oidcnode runs, for tests, a second OpenID provider implementation
// beside testkit/oidcprovider: panva's oidc-provider for Node.js (from the
// npm registry, certified by the OpenID Foundation), set up the way the
// common providers are by default: an ID token with "sub" only (the
// person's claims from UserInfo), a confidential client that must
// authenticate at the device endpoint too, PKCE required, and "iss" in
// its answers (RFC 9207). Its development login and consent pages stand
// for a person's browser.
//
// The provider's packages are installed by 'make test-js-deps' (npm ci in
// _js); a test that needs it is skipped without them unless
// SVC_REQUIRE_BROWSER=1 (CI) makes that a failure.
package oidcnode
