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
		Duration string `json:"duration"`
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
