package backup

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func sample(t *testing.T) ([]byte, string) {
	t.Helper()
	state := `{"version":1,"index":42,"state":{"clusterId":"c1","namespaces":{"a":{},"b":{}},"vms":{"a/x":{}},"audit":[{},{},{}],"fabric":{"peers":{"p1":{}},"joinTokens":{}},"cert":{"pem":"x"}}}`
	var buf bytes.Buffer
	h := Header{ClusterID: "c1", Index: 42, Term: 3, CreatedAt: time.Unix(1, 0).UTC(), SVCVersion: "v1", Peer: "p1",
		Size: int64(len(state)), Secret: []byte("0123456789abcdef0123456789abcdef")}
	if err := Write(&buf, h, strings.NewReader(state)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), state
}

func TestFile_round_trip(t *testing.T) {
	file, state := sample(t)
	r, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Format != Format || r.Header.Index != 42 || r.Header.Term != 3 || string(r.Header.Secret[:4]) != "0123" {
		t.Fatalf("header %+v", r.Header)
	}
	got, err := io.ReadAll(r.Body())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != state {
		t.Fatalf("body %q", got)
	}
	if err := r.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestFile_counts(t *testing.T) {
	file, _ := sample(t)
	r, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := Counts(r.Body())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, c := range cs {
		got[c.Kind] = c.N
	}
	want := map[string]int{"namespaces": 2, "vms": 1, "audit": 3, "fabric.peers": 1, "fabric.joinTokens": 0}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	if _, ok := got["cert"]; ok {
		t.Errorf("cert counted: %v", got)
	}
}

func TestFile_refused(t *testing.T) {
	file, _ := sample(t)
	nl := bytes.IndexByte(file, '\n')
	flip := func(i int) []byte {
		b := bytes.Clone(file)
		b[i] ^= 0x01
		return b
	}
	tests := []struct {
		name string
		file []byte
		// atOpen: refused by NewReader (else by Verify).
		atOpen bool
	}{
		{"empty", nil, true},
		{"not_json", []byte("hello\n"), true},
		{"other_format", []byte(`{"format":"tar","version":1,"clusterId":"c","size":0}` + "\nsha256 x\n"), true},
		{"newer_version", []byte(`{"format":"svc-snapshot","version":99,"clusterId":"c","size":0}` + "\n"), true},
		{"cut_in_header", file[:nl/2], true},
		{"cut_after_header", file[:nl+1], false},
		{"cut_in_state", file[:nl+20], false},
		{"cut_in_checksum", file[:len(file)-10], false},
		{"no_checksum", file[:len(file)-len("sha256 ")-65], false},
		{"state_byte_changed", flip(nl + 10), false},
		{"header_byte_changed", flip(nl - 3), false},
		{"trailing_bytes", append(bytes.Clone(file), "x"...), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tt.file))
			if tt.atOpen {
				if err == nil {
					t.Fatal("opened")
				}
				return
			}
			if err != nil {
				// A changed header byte may already break its JSON.
				if tt.name == "header_byte_changed" {
					return
				}
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, r.Body())
			if err := r.Verify(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Verify: %v, want ErrCorrupt", err)
			}
		})
	}
}
