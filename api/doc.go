// Package api holds the wire types of the svc REST API (v1), shared by the
// server, the command-line client and the tests, and a typed Go client.
//
// Every error the API returns is a Kubernetes-style Status object; the client
// turns it into a *StatusError so that callers can test the reason with
// errors.As or the Is* helpers instead of matching message text.
package api
