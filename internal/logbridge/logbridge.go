package logbridge

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
)

// Writer is an io.Writer that logs each line it is given to a slog.Logger.
type Writer struct {
	Log *slog.Logger
}

var levels = []struct {
	tag   string
	level slog.Level
}{
	{"[TRACE]", slog.LevelDebug - 4},
	{"[DEBUG]", slog.LevelDebug},
	{"[INFO]", slog.LevelInfo},
	{"[WARN]", slog.LevelWarn},
	{"[ERR]", slog.LevelError},
	{"[ERROR]", slog.LevelError},
}

// Write logs every line of p; it never fails.
func (w Writer) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		w.line(string(line))
	}
	return len(p), nil
}

func (w Writer) line(s string) {
	level := slog.LevelInfo
	for _, l := range levels {
		if i := strings.Index(s, l.tag); i >= 0 {
			level = l.level
			s = s[i+len(l.tag):]
			break
		}
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	ctx := context.Background()
	if w.Log.Enabled(ctx, level) {
		w.Log.Log(ctx, level, s)
	}
}
