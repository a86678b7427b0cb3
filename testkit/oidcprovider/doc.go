// Package oidcprovider starts a real OpenID Connect provider on loopback for
// tests: zitadel/oidc's OpenID Provider (the library ZITADEL is built on,
// with its example login and device pages), holding the users a test
// names, each with a password and directory groups, and one client that
// may use the authorization code flow with PKCE on any loopback port (RFC
// 8252) and the device authorization grant (RFC 8628). It stands in for
// Okta, Entra ID, Google or Keycloak, none of which a test machine reaches;
// svc talks to it as to any of them, through discovery, its keys and its
// token endpoint. The ID token carries a "groups" claim when the "groups"
// scope is asked for, as Okta and Keycloak send it.
package oidcprovider
