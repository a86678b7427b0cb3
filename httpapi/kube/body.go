package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/svc-project/svc/api"
)

// readBody reads a request's body whole, at most maxBody bytes: one that
// is larger is 413, one that does not arrive in time 408 (as /api/v1
// answers them), one that names a field twice 400 (Kubernetes' strict
// decoding: which of two values would count is no one's guess).
func readBody(r *http.Request) ([]byte, *api.Status) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		st := api.NewStatus(http.StatusRequestTimeout, api.ReasonTimeout, sprintf("the request body did not arrive in time: %v", err))
		return nil, &st
	case err != nil:
		st := badRequest("reading the body: %v", err)
		return nil, &st
	case len(b) > maxBody:
		st := api.NewStatus(http.StatusRequestEntityTooLarge, api.ReasonRequestEntityTooLarge, sprintf("the object is over %d bytes", maxBody))
		return nil, &st
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := duplicateFields(b); err != nil {
			st := badRequest("strict decoding error: %v", err)
			return nil, &st
		}
	}
	return b, nil
}

// maxDepth bounds how deep a body's objects and lists nest.
const maxDepth = 64

// duplicateFields returns an error naming the first field an object of the
// JSON document b names twice (by its path), or nesting past maxDepth; a
// document that is no JSON is left to its decoder.
func duplicateFields(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	type level struct {
		path  string
		keys  map[string]bool // nil: a list
		index int
		key   bool // the next string of an object is a key
	}
	var stack []*level
	var last string
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or no JSON: the decoder says what is wrong
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].keys != nil {
				stack[len(stack)-1].key = true
			}
			continue
		}
		if top != nil && top.keys != nil && top.key {
			k, _ := tok.(string)
			if top.keys[k] {
				return fmt.Errorf("duplicate field %q", strings.TrimPrefix(top.path+"."+k, "."))
			}
			top.keys[k] = true
			top.key, last = false, k
			continue
		}
		// A value: of top's key, or an item of top's list.
		path := ""
		if top != nil {
			if top.keys != nil {
				path, top.key = top.path+"."+last, true
			} else {
				path = fmt.Sprintf("%s[%d]", top.path, top.index)
				top.index++
			}
		}
		if d, ok := tok.(json.Delim); ok {
			if len(stack) == maxDepth {
				return fmt.Errorf("the object nests deeper than %d levels", maxDepth)
			}
			l := &level{path: path}
			if d == '{' {
				l.keys, l.key = map[string]bool{}, true
			}
			stack = append(stack, l)
		}
	}
}
