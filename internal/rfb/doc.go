// Package rfb speaks the opening of the RFB (VNC) protocol as a client: the
// version exchange, the security types a server offers and VNC
// authentication, and the server's side of an opening with no security
// (ServeNone, for a client authorized otherwise) or VNC authentication
// (ServeVNCAuth, for a proxy that asks for a VM's password). Tests use it
// to prove that a VM's screen needs its password.
package rfb
