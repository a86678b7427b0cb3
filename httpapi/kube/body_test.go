package kube

import (
	"strings"
	"testing"
)

func TestDuplicateFields_cases(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"a":1,"b":{"c":2,"d":[{"e":1},{"e":2}]}}`, ""},
		{`{"a":1,"a":2}`, `duplicate field "a"`},
		{`{"spec":{"image":"x","cpu":1,"image":"y"}}`, `duplicate field "spec.image"`},
		{`{"m":{"labels":{"k":"1"}},"s":[{"x":1,"x":2}]}`, `duplicate field "s[0].x"`},
		{`{"a":{"b":1},"c":{"b":2}}`, ""},
		{`[1,2,{"a":1}]`, ""},
		{strings.Repeat("[", 70) + strings.Repeat("]", 70), "deeper than 64"},
		{`not json`, ""},
	} {
		err := duplicateFields([]byte(c.body))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("duplicateFields(%.40s) = %v, want %q", c.body, err, c.want)
		}
	}
}
