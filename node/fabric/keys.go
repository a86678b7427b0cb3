package fabric

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
)

// KeysPath is the join service's route where an admitted peer fetches the
// keys it cannot open from the state itself: the gossip keyring, and the
// cluster secret once an admin approved it.
const KeysPath = "/fabric/v1/keys"

// KeysResponse is what an admitted peer gets from KeysPath: the gossip
// keyring in use (its epoch in the state), and the cluster secret when the
// peer is approved (nil while it is pending).
type KeysResponse struct {
	Gossip GossipKeys `json:"gossip"`
	Epoch  uint64     `json:"epoch"`
	Secret []byte     `json:"secret,omitempty"`
}

// keysHandler answers KeysPath for an Admitter, the caller known by the
// certificate it presented.
func keysHandler(a Admitter) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var certs []*x509.Certificate
		if r.TLS != nil {
			certs = r.TLS.PeerCertificates
		}
		resp, err := a.Keys(r.Context(), certs)
		if err != nil {
			var ref *Refusal
			if !errors.As(err, &ref) {
				ref = Refuse(http.StatusServiceUnavailable, "%v", err)
			}
			writeRefusal(w, ref)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}
}

// FetchKeys asks the peer whose gossip port is at addr for this peer's
// keys (KeysPath), presenting this peer's certificate.
func (id *Identity) FetchKeys(ctx context.Context, dial DialFunc, addr string) (KeysResponse, error) {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13, InsecureSkipVerify: true, VerifyConnection: caChecker(id.CAFingerprint()),
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return id.Certificate(), nil },
	}
	var out KeysResponse
	err := call(ctx, serviceClient(dial, cfg), http.MethodGet, "https://"+addr+KeysPath, nil, &out)
	return out, err
}
