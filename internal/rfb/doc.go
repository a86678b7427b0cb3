// Package rfb speaks the opening of the RFB (VNC) protocol as a client: the
// version exchange, the security types a server offers and VNC
// authentication. Tests use it to prove that a VM's screen needs its password.
package rfb
