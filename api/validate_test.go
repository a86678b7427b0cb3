package api

import "testing"

func TestIsRegistryReference_cases(t *testing.T) {
	cases := []struct {
		image string
		want  bool
	}{
		{"mini-linux", false},
		{"ubuntu-24-04", false},
		{"registry.example.com/team/app:v1", true},
		{"localhost:5000/app", true},
		{"team/app@sha256:" + "0000000000000000000000000000000000000000000000000000000000000000", true},
		{"", false},
	}
	for _, c := range cases {
		if got := IsRegistryReference(c.image); got != c.want {
			t.Errorf("IsRegistryReference(%q) = %v, want %v", c.image, got, c.want)
		}
	}
}
