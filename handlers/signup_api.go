package handlers

import (
	"net/http"
	"time"

	"admit/store"
)

// signupJSON is the JSON signup body.
type signupJSON struct {
	RequestKey    string `json:"requestKey"`
	Email         string `json:"email"`
	NoticeVersion int    `json:"noticeVersion"`
	Permission    bool   `json:"permission"`
}

// signupReceivedJSON is the 202 body; a same-key replay has no token.
type signupReceivedJSON struct {
	Status       string `json:"status"`
	RemovalToken string `json:"removalToken,omitempty"`
}

// handleSignupAPI is the JSON signup. Its body was read, and its
// in-progress place taken, by the intake (admission.Intake).
func (s *Server) handleSignupAPI(w http.ResponseWriter, r *http.Request) error {
	var body signupJSON
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	noStore(w)
	res, err := s.admit(r, r.PathValue("slug"), &signupForm{RequestKey: body.RequestKey, Email: body.Email,
		NoticeVersion: body.NoticeVersion, Permission: body.Permission})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, signupReceivedJSON{Status: "received", RemovalToken: res.RemovalToken})
	return nil
}

// publicProgramJSON is GET /api/public/programs/{slug}.
type publicProgramJSON struct {
	Slug       string     `json:"slug"`
	Name       string     `json:"name"`
	Purpose    string     `json:"purpose"`
	SignupOpen bool       `json:"signupOpen"`
	Notice     noticeJSON `json:"notice"`
	// DisplayName and Contact are the workspace's; Contact is null until
	// an owner sets one.
	DisplayName string  `json:"displayName"`
	Contact     *string `json:"contact"`
}

type noticeJSON struct {
	Version       int    `json:"version"`
	Purpose       string `json:"purpose"`
	ContactText   string `json:"contactText"`
	RetentionText string `json:"retentionText"`
	PublishedAt   string `json:"publishedAt"`
}

func toNoticeJSON(n *store.Notice) noticeJSON {
	return noticeJSON{Version: n.Version, Purpose: n.Purpose, ContactText: n.ContactText,
		RetentionText: n.RetentionText, PublishedAt: n.PublishedAt.UTC().Format(time.RFC3339)}
}

// handlePublicProgramAPI returns a program's public notice.
func (s *Server) handlePublicProgramAPI(w http.ResponseWriter, r *http.Request) error {
	p, n, err := s.db.PublicProgram(r.Context(), r.PathValue("slug"))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, publicProgramJSON{Slug: p.Slug, Name: p.Name, Purpose: p.Purpose,
		SignupOpen: p.SignupOpen && p.RetiredAt == nil, Notice: toNoticeJSON(n),
		DisplayName: p.WorkspaceName, Contact: nonEmpty(p.WorkspaceContact)})
	return nil
}
