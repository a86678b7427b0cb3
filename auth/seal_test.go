package auth

import (
	"bytes"
	"errors"
	"testing"
)

func TestSeal_roundTrip_and_refusals(t *testing.T) {
	seed, other := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	sealed, err := Seal(seed, []byte("hunter2"), []byte("ns/reg"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("hunter2")) {
		t.Fatal("the secret stands in the sealed bytes")
	}
	if got, err := Unseal(seed, sealed, []byte("ns/reg")); err != nil || string(got) != "hunter2" {
		t.Fatalf("unseal: %q %v", got, err)
	}
	cases := []struct {
		name         string
		seed, sealed []byte
		aad          string
	}{
		{"another cluster", other, sealed, "ns/reg"},
		{"another place", seed, sealed, "ns/other"},
		{"truncated", seed, sealed[:5], "ns/reg"},
		{"tampered", seed, append(append([]byte(nil), sealed[:len(sealed)-1]...), sealed[len(sealed)-1]^1), "ns/reg"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Unseal(c.seed, c.sealed, []byte(c.aad)); !errors.Is(err, ErrUnseal) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	if _, err := Seal(nil, []byte("x"), nil); err == nil {
		t.Fatal("sealed without a key")
	}
}
