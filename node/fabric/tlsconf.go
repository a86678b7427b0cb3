package fabric

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// PeerServerName is the TLS server name a peer asks for when it calls
// another peer's HTTPS port: that port then answers with its peer
// certificate and requires the caller's (users get the uploaded
// certificate, and are asked for none).
const PeerServerName = "svc-peer"

// ErrNoPeerCert is wrapped when a connection carries no peer certificate.
var ErrNoPeerCert = errors.New("no peer certificate")

// keyIDOf is KeyID of a certificate's public key.
func keyIDOf(c *x509.Certificate) string {
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// VerifyPeer checks the certificates another peer presented: signed by the
// cluster's CA, valid now, and naming a peer that the cluster admitted with
// that key and has not removed. It returns the peer's name.
func (id *Identity) VerifyPeer(certs []*x509.Certificate, trust *Trust, now time.Time) (string, error) {
	if len(certs) == 0 {
		return "", ErrNoPeerCert
	}
	leaf := certs[0]
	roots := x509.NewCertPool()
	roots.AddCert(id.CA)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return "", fmt.Errorf("certificate of %q is not one of this cluster's: %w", leaf.Subject.CommonName, err)
	}
	name := leaf.Subject.CommonName
	if err := trust.Check(name, keyIDOf(leaf)); err != nil {
		return "", err
	}
	return name, nil
}

// PeerOf returns the name of the peer at the other end of a connection
// whose handshake VerifyPeer accepted, checked against trust again: a peer
// removed since is refused on its next request.
func (id *Identity) PeerOf(cs *tls.ConnectionState, trust *Trust) (string, error) {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		return "", ErrNoPeerCert
	}
	leaf := cs.PeerCertificates[0]
	if err := trust.Check(leaf.Subject.CommonName, keyIDOf(leaf)); err != nil {
		return "", err
	}
	if time.Now().After(leaf.NotAfter) {
		return "", fmt.Errorf("certificate of %q expired at %s", leaf.Subject.CommonName, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return leaf.Subject.CommonName, nil
}

func (id *Identity) verifyConn(trust *Trust) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		_, err := id.VerifyPeer(cs.PeerCertificates, trust, time.Now())
		return err
	}
}

// PeerServerConfig is what a peer serves other peers with (its Raft port,
// and its HTTPS port to a client asking for PeerServerName): TLS 1.3, its
// certificate, and a certificate of an admitted peer required of the
// client.
func (id *Identity) PeerServerConfig(trust *Trust) *tls.Config {
	return &tls.Config{
		MinVersion:       tls.VersionTLS13,
		GetCertificate:   func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return id.Certificate(), nil },
		ClientAuth:       tls.RequireAnyClientCert,
		VerifyConnection: id.verifyConn(trust),
	}
}

// PeerClientConfig is what a peer calls other peers with: TLS 1.3, its
// certificate, and the server's checked as an admitted peer's (not by
// host name: peers are addressed by IP and named by certificate).
func (id *Identity) PeerClientConfig(trust *Trust) *tls.Config {
	return &tls.Config{
		MinVersion:           tls.VersionTLS13,
		ServerName:           PeerServerName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return id.Certificate(), nil },
		InsecureSkipVerify:   true, // VerifyConnection checks the chain and the trust set
		VerifyConnection:     id.verifyConn(trust),
	}
}
