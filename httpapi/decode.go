package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/svc-project/svc/api"
)

// maxJSONBody bounds every JSON request body.
const maxJSONBody = 1 << 20

// decodeJSON reads a JSON object body into v (a pointer to a struct). Fields
// v does not have are ignored and each is named in a Warning header; wrong
// types and malformed JSON are 400, an oversized body 413.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeJSONMax(w, r, v, maxJSONBody)
}

// decodeJSONMax is decodeJSON for a body of at most max bytes.
func decodeJSONMax(w http.ResponseWriter, r *http.Request, v any, max int64) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		return bodyError(err)
	}
	if trimmed := strings.TrimSpace(string(body)); !strings.HasPrefix(trimmed, "{") {
		return badRequest("request body must be a JSON object") // not null, a list or a scalar
	}
	if !utf8.Valid(body) {
		return badRequest("request body is not valid UTF-8")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return badRequest("request body must be a JSON object: %v", err)
	}
	known := jsonFields(reflect.TypeOf(v).Elem())
	var unknown []string
	for k := range raw {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		w.Header().Add("Warning", fmt.Sprintf("299 - %q", "unknown field "+k+" ignored"))
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return badRequest("field %q must be a %s, not a JSON %s", te.Field, jsonKind(te.Type), te.Value)
		}
		return badRequest("malformed JSON body: %v", err)
	}
	return nil
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return "object"
}

// bodyError answers a failure to read a request body: 413 when it is too
// large, 408 when it did not arrive in time, 400 otherwise.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return errorf(http.StatusRequestEntityTooLarge, api.ReasonRequestEntityTooLarge, "request body is over %d bytes", mbe.Limit)
	case errors.Is(err, errBodyTimeout):
		return errorf(http.StatusRequestTimeout, api.ReasonTimeout, "%v", err)
	}
	return badRequest("read request body: %v", err)
}
