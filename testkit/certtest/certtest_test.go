package certtest

import (
	"crypto/tls"
	"testing"
)

func TestSelfSigned_names(t *testing.T) {
	certPEM, keyPEM, err := SelfSigned("svc test", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf := pair.Leaf
	if leaf.Subject.CommonName != "svc test" || len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal([]byte{127, 0, 0, 1}) {
		t.Fatalf("certificate %v for %v", leaf.Subject, leaf.IPAddresses)
	}
	if err := leaf.VerifyHostname("localhost"); err != nil {
		t.Fatal(err)
	}
	if err := leaf.VerifyHostname("example.com"); err == nil {
		t.Fatal("the certificate is good for a host it does not name")
	}
}
