package httpapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestDecodeJSON_cases(t *testing.T) {
	type body struct {
		Duration string         `json:"duration"`
		Labels   map[string]any `json:"labels"`
		Items    []any          `json:"items"`
	}
	cases := []struct {
		name, in string
		want     string // "" decodes
	}{
		{"an object", `{"duration":"1h"}`, ""},
		{"an empty object", ` {} `, ""},
		{"nothing", ``, "must be a JSON object"},
		{"null", `null`, "must be a JSON object"},
		{"a list", `[{"duration":"1h"}]`, "must be a JSON object"},
		{"a string", `"1h"`, "must be a JSON object"},
		{"invalid UTF-8 in a value", "{\"duration\":\"1h\xff\"}", "not valid UTF-8"},
		{"a wrong type", `{"duration":5}`, `field "duration" must be a string`},
		{"malformed", `{"duration":`, "must be a JSON object"},
		{"a key twice", `{"duration":"1h","duration":"2h"}`, `field "duration" is given twice`},
		{"a key twice, nested", `{"labels":{"a":1,"b":{"c":1},"a":2}}`, `field "labels.a" is given twice`},
		{"a key twice, deeper", `{"labels":{"b":{"c":1,"c":[1]}}}`, `field "labels.b.c" is given twice`},
		{"a key twice in an array's object", `{"items":[1,{"k":1,"k":2}]}`, `field "items.[].k" is given twice`},
		{"a key twice, unknown field", `{"x":1,"x":2}`, `field "x" is given twice`},
		{"a key twice in two cases", `{"duration":"1h","Duration":"2h"}`, `field "Duration" is given twice`},
		{"map keys in two cases", `{"labels":{"a":1,"A":2}}`, ""},
		{"one key in sibling objects", `{"labels":{"a":{"k":1},"b":{"k":1}},"items":[{"k":1},{"k":2}]}`, ""},
		{"escaped and plain spelling of one key", `{"duration":"1h","d\u0075ration":"2h"}`, `field "duration" is given twice`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v body
			err := decodeJSON(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.in)), &v)
			var ae *apiError
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("err = %v", err)
			case c.want != "" && (!errors.As(err, &ae) || ae.code != http.StatusBadRequest || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("err = %v, want a 400 saying %q", err, c.want)
			}
		})
	}
}
