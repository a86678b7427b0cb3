// Package logbridge turns the text lines that libraries such as raft and
// memberlist write ("... [WARN] raft: message") into log/slog records at the
// matching level.
package logbridge
