package api

import "testing"

func TestIdentitySettled_waits_for_the_step(t *testing.T) {
	cases := []struct {
		name string
		id   *GuestIdentity
		want bool
	}{
		{"not recorded yet", nil, false},
		{"pending", &GuestIdentity{State: IdentityPending}, false},
		{"no agent yet (the step runs when it answers)", &GuestIdentity{State: IdentityNone, Message: IdentityNoAgentYet + " within 10s: ..."}, false},
		{"set", &GuestIdentity{State: IdentitySet}, true},
		{"failed", &GuestIdentity{State: IdentityFailed}, true},
		{"an image without the step", &GuestIdentity{State: IdentityNone, Message: "the image has no identity step"}, true},
	}
	for _, tc := range cases {
		if got := IdentitySettled(tc.id); got != tc.want {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}
