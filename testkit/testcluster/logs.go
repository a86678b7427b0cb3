package testcluster

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"sync"
)

// keptLines is how many of the peers' last warnings a failed test shows.
const keptLines = 300

// warnings keeps the peers' last warnings and errors, shown when the test
// fails: a cluster test that fails in CI says what its peers saw.
type warnings struct {
	mu      sync.Mutex
	lines   []string
	dropped int
}

// Write takes one or more log lines.
func (w *warnings) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		if len(w.lines) == keptLines {
			w.lines = w.lines[1:]
			w.dropped++
		}
		w.lines = append(w.lines, string(l))
	}
	return len(p), nil
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	if w.dropped > 0 {
		b.WriteString("(earlier lines left out)\n")
	}
	for _, l := range w.lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// logger is a peer's log: everything to stderr with Options.Verbose (or
// SVC_TEST_VERBOSE set), else its warnings and errors kept for a failure.
func (c *Cluster) logger() *slog.Logger {
	if c.opts.Verbose || os.Getenv("SVC_TEST_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(&c.warnings, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// showWarnings logs the peers' last warnings when the test failed.
func (c *Cluster) showWarnings() {
	if c.tb.Failed() {
		if s := c.warnings.String(); s != "" {
			c.tb.Logf("the peers' last warnings:\n%s", s)
		}
	}
}
