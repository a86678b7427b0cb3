package logbridge

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestWriter_levels(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"hclog warn", "2026-11-21T06:30:00.000Z [WARN]  raft: heartbeat timeout reached\n", "level=WARN msg=\"raft: heartbeat timeout reached\""},
		{"memberlist debug dropped", "2026/11/21 06:30:00 [DEBUG] memberlist: stream connection\n", ""},
		{"err", "[ERR] memberlist: failed to receive\n", "level=ERROR msg=\"memberlist: failed to receive\""},
		{"untagged", "plain line\n", "level=INFO msg=\"plain line\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := Writer{Log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime}))}
			if _, err := w.Write([]byte(c.in)); err != nil {
				t.Fatal(err)
			}
			got := strings.TrimSpace(buf.String())
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
