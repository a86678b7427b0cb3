package backup

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// Count is how many records of one kind a snapshot holds.
type Count struct {
	Kind string `json:"kind"`
	N    int    `json:"n"`
}

// Counts reads a snapshot's state (Reader.Body) and counts its records
// per kind: each map or list of the state, by its JSON name.
func Counts(body io.Reader) ([]Count, error) {
	var sf struct {
		State map[string]json.RawMessage `json:"state"`
	}
	if err := json.NewDecoder(body).Decode(&sf); err != nil {
		return nil, fmt.Errorf("read the state: %w", err)
	}
	var out []Count
	for kind, raw := range sf.State {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) == nil && m != nil {
			if kind == "fabric" {
				var fb struct {
					Peers      map[string]json.RawMessage `json:"peers"`
					JoinTokens map[string]json.RawMessage `json:"joinTokens"`
				}
				if json.Unmarshal(raw, &fb) == nil {
					out = append(out, Count{Kind: "fabric.peers", N: len(fb.Peers)}, Count{Kind: "fabric.joinTokens", N: len(fb.JoinTokens)})
				}
				continue
			}
			if kind == "cert" {
				continue
			}
			out = append(out, Count{Kind: kind, N: len(m)})
			continue
		}
		var l []json.RawMessage
		if json.Unmarshal(raw, &l) == nil && l != nil {
			out = append(out, Count{Kind: kind, N: len(l)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out, nil
}
