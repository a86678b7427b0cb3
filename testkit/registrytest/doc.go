// Package registrytest starts a real OCI registry server for tests: Debian's
// docker-registry (distribution 2.8) with htpasswd authentication and a
// self-signed TLS certificate, behind a byte-counting proxy so that a test
// can tell how much a client sent.
package registrytest
