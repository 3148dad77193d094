package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// newLogger is the server's logger: ADMIT_LOG_FORMAT text (the default,
// logfmt-style key=value) or json (one object a line, for shipping), at
// ADMIT_LOG_LEVEL debug, info (the default), warn or error. Every request
// writes one info line, so warn keeps only problems.
func newLogger(getenv func(string) string, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	switch v := strings.ToLower(strings.TrimSpace(getenv("ADMIT_LOG_LEVEL"))); v {
	case "debug":
		level = slog.LevelDebug
	case "", "info":
		level = slog.LevelInfo
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return nil, fmt.Errorf("ADMIT_LOG_LEVEL=%q must be debug, info, warn or error", v)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch v := strings.ToLower(strings.TrimSpace(getenv("ADMIT_LOG_FORMAT"))); v {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("ADMIT_LOG_FORMAT=%q must be text or json", v)
	}
}
