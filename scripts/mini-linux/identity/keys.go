//go:build linux

package main

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"math/big"
)

// hostKey is a new SSH host key: its private key file in dropbear's format,
// and its public key in SSH's wire format.
type hostKey struct {
	file, public []byte
}

// sshString appends b as an SSH string (a 32-bit length, then b).
func sshString(out, b []byte) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
	return append(out, b...)
}

// sshMpint appends a non-negative integer, big-endian bytes b, as an SSH
// mpint (no leading zeros, one zero byte before a set high bit).
func sshMpint(out, b []byte) []byte {
	n := new(big.Int).SetBytes(b).Bytes()
	if len(n) > 0 && n[0]&0x80 != 0 {
		n = append([]byte{0}, n...)
	}
	return sshString(out, n)
}

// newEd25519 makes an Ed25519 key. Dropbear's file: the string
// "ssh-ed25519", then a 64-byte string of the seed and the public key
// (what Go's ed25519.PrivateKey holds).
func newEd25519() (hostKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return hostKey{}, err
	}
	const name = "ssh-ed25519"
	return hostKey{
		file:   sshString(sshString(nil, []byte(name)), priv),
		public: sshString(sshString(nil, []byte(name)), pub),
	}, nil
}

// newECDSA makes an ECDSA key on NIST P-256. Dropbear's file: its public
// key (the strings "ecdsa-sha2-nistp256" and "nistp256", and the point,
// uncompressed), then the private scalar as an mpint.
func newECDSA() (hostKey, error) {
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return hostKey{}, err
	}
	pub := sshString(nil, []byte("ecdsa-sha2-nistp256"))
	pub = sshString(pub, []byte("nistp256"))
	pub = sshString(pub, priv.PublicKey().Bytes())
	file := sshMpint(append([]byte(nil), pub...), priv.Bytes())
	return hostKey{file: file, public: pub}, nil
}
