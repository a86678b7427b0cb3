package httpapi

import (
	"bytes"
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
// types, a key given twice in one object and malformed JSON are 400, an
// oversized body 413.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeJSONMax(w, r, v, maxJSONBody)
}

// decodeJSONStrict is decodeJSON for the bodies of svc's own routes that
// replace a whole record (a namespace's quota): a field it does not know is
// a mistake that would clear what the caller meant to set, so it is 400.
func decodeJSONStrict(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		return bodyError(err)
	}
	unknown, err := parseJSONObject(body, v)
	if err != nil {
		return err
	}
	if len(unknown) > 0 {
		return badRequest("unknown field %s: the fields are %s", strings.Join(unknown, ", "), strings.Join(jsonFields(reflect.TypeOf(v).Elem()), ", "))
	}
	return nil
}

// decodeJSONMax is decodeJSON for a body of at most max bytes.
func decodeJSONMax(w http.ResponseWriter, r *http.Request, v any, max int64) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		return bodyError(err)
	}
	unknown, err := parseJSONObject(body, v)
	for _, k := range unknown {
		w.Header().Add("Warning", fmt.Sprintf("299 - %q", "unknown field "+k+" ignored"))
	}
	return err
}

// parseJSONObject decodes a JSON object into v (a pointer to a struct) and
// returns the top-level fields v does not have, sorted. Its errors are 400
// Statuses.
func parseJSONObject(body []byte, v any) (unknown []string, err error) {
	if trimmed := strings.TrimSpace(string(body)); !strings.HasPrefix(trimmed, "{") {
		return nil, badRequest("request body must be a JSON object") // not null, a list or a scalar
	}
	if !utf8.Valid(body) {
		return nil, badRequest("request body is not valid UTF-8")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, badRequest("request body must be a JSON object: %v", err)
	}
	if path, ok := duplicateKey(body); ok {
		return nil, badRequest("field %q is given twice: give each field once", path)
	}
	known := jsonFields(reflect.TypeOf(v).Elem())
	for k := range raw {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return unknown, badRequest("field %q must be a %s, not a JSON %s", te.Field, jsonKind(te.Type), te.Value)
		}
		return unknown, badRequest("malformed JSON body: %v", err)
	}
	return unknown, nil
}

// duplicateKey returns the path ("a.b") of the first key given twice in one
// object of a valid JSON document (at the top, where keys are the struct's
// fields, in any case: Go's decoder matches "Command" to "command"). Go
// keeps the last of them, other decoders the first: a body with both means
// different things to a proxy that checked it and to the peer that acts on
// it.
func duplicateKey(body []byte) (string, bool) {
	type level struct {
		keys   map[string]bool // nil: an array
		name   string          // the key this value is under
		expect bool            // an object's next token is a key
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var stack []*level
	path := func(k string) string {
		var parts []string
		for _, l := range stack[1:] {
			parts = append(parts, l.name)
		}
		return strings.Join(append(parts, k), ".")
	}
	pending := "" // the key whose value comes next
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false // the end (or invalid JSON, which Unmarshal reports)
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.keys != nil && top.expect {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k, _ := tok.(string)
			seen := k
			if len(stack) == 1 {
				seen = strings.ToLower(k) // the body's own fields: Go matches them in any case
			}
			if top.keys[seen] {
				return path(k), true
			}
			top.keys[seen] = true
			top.expect, pending = false, k
			continue
		}
		name := pending
		if top != nil && top.keys == nil {
			name = "[]" // an element of an array
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{keys: map[string]bool{}, name: name, expect: true})
		case json.Delim('['):
			stack = append(stack, &level{name: name})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if top != nil && top.keys != nil {
			top.expect = true // the value is read (a nested one when it is closed)
		}
	}
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
