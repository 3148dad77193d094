package handlers

import (
	"admit/store"
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
)

// csvCell neutralizes a cell a spreadsheet would run as a formula.
func csvCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// handleExportCSV streams the program's queue as CSV (owner-only, no-store).
// The store records the export as an audit event holding only the row count.
func (s *Server) handleExportCSV(w http.ResponseWriter, r *http.Request) error {
	a, id := ownerActor(r), r.PathValue("id")
	p, err := s.db.ProgramByID(r.Context(), a, id)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	started := false
	start := func() error {
		started = true
		noStore(w)
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+p.Slug+`-queue.csv"`)
		w.WriteHeader(http.StatusOK)
		return cw.Write([]string{"id", "email", "state", "created_at", "updated_at", "notice_version", "permission_at"})
	}
	err = s.db.ExportQueue(r.Context(), a, id, func(e store.Entry) error {
		if !started {
			if err := start(); err != nil {
				return err
			}
		}
		return cw.Write([]string{e.ID, csvCell(e.Email), e.State, rfc3339(e.CreatedAt), rfc3339(e.UpdatedAt),
			strconv.Itoa(e.NoticeVersion), rfc3339(e.PermissionAt)})
	})
	if err != nil && !started {
		return err
	}
	if err == nil && !started {
		err = start()
	}
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	if err != nil {
		// The status is sent; the truncated file is the only signal left.
		s.log.ErrorContext(r.Context(), "export failed", "route", r.Pattern, "err", err)
	}
	return nil
}
