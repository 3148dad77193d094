package cli

import (
	"io"
	"log/slog"

	"admit/internal/config"
)

// newLogger is the server's logger on w: logfmt-style key=value text, or
// one JSON object a line for shipping, at the configured level
// (ADMIT_LOG_FORMAT, ADMIT_LOG_LEVEL; config.Log).
func newLogger(c config.Log, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.Level}
	if c.JSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
