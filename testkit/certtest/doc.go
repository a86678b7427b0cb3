// Package certtest makes self-signed TLS server certificates for tests: an
// uploaded certificate, a test registry's.
package certtest
