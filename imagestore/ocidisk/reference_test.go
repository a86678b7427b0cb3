package ocidisk

import (
	"errors"
	"strings"
	"testing"
)

func TestParseUserReference_cases(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	cases := []struct {
		ref  string
		push bool
		want string // "" is valid
	}{
		{ref: "reg.example/team/app:v1"},
		{ref: "reg.example:5000/team/app:v1"},
		{ref: "127.0.0.1:5000/a/b-c_d.e__f:1.0-rc"},
		{ref: "[fd00::1]:5000/x:y"},
		{ref: "localhost:5000/x:y"},
		{ref: "reg.example/x@" + digest},
		{ref: "reg.example/x", push: true},
		{ref: ":5000/x:y", want: "not a host name"},
		{ref: "-127.0.0.70:5000/x:y", want: "not a host name"},
		{ref: "reg.example:99999/x:y", want: "not 1-65535"},
		{ref: "reg.example:0/x:y", want: "not 1-65535"},
		{ref: "reg.example:+80/x:y", want: "not 1-65535"},
		{ref: "reg.example:/x:y", want: "empty port"},
		{ref: "/../x", want: "not a host name"},
		{ref: "//x", want: "not a host name"},
		{ref: "reg.example//x:y", want: "path"},
		{ref: "reg.example/../x:y", want: "path"},
		{ref: "reg.example/X:y", want: "path"},
		{ref: "reg.example/x:v1@" + digest, want: "both a tag and a digest"},
		{ref: "reg.example/x@sha256:abc", want: "digest"},
		{ref: "reg.example/x@" + digest, push: true, want: "not a digest"},
		{ref: "reg.example/x:.bad", want: "tag"},
		{ref: "[::ffff:1.2.3.4]:5000/x:y", want: "not an IPv6"},
		{ref: "[fd00::1/x:y", want: "IPv6"},
		{ref: "reg.example", want: "registry host and a path"},
		{ref: "reg.example/" + strings.Repeat("a", 600) + ":y", want: "over 512"},
	}
	for _, c := range cases {
		t.Run(c.ref, func(t *testing.T) {
			_, err := ParseUserReference(c.ref, true, c.push)
			if c.want == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrBadReference) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// svc pins a tagged reference to the digest it resolved to: that form is
// its own, taken from no user.
func TestParseReference_pinned(t *testing.T) {
	pinned := "reg.example/x:v1@sha256:" + strings.Repeat("ab", 32)
	if _, err := ParseReference(pinned, true, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseUserReference(pinned, true, false); err == nil {
		t.Fatal("a user's tag and digest together were taken")
	}
}
