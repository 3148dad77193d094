package handlers

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"admit/store"
	"admit/views"
)

// ---- shared owner helpers ----

// programSummary is what every owner page shows about a program.
func programSummary(p *store.Program) views.ProgramSummary {
	return views.ProgramSummary{ID: p.ID, Slug: p.Slug, Purpose: p.Purpose, SignupOpen: p.SignupOpen,
		AccessEnabled: p.AccessEnabled, Retired: p.RetiredAt != nil, HasContent: p.HasContent, QueueCap: p.QueueCap,
		HourlyCap: p.HourlyCap, SeatCap: p.SeatCap, MaxInvitationDays: p.MaxInvitationDays, Occupied: p.Occupied,
		Revision: p.Revision, CurrentNoticeVersion: p.CurrentNoticeVersion, CreatedAt: p.CreatedAt}
}

// stateCountsView lists the non-zero counts in lifecycle order.
func stateCountsView(m map[string]int) []views.StateCount {
	var out []views.StateCount
	for _, st := range store.EntryStates {
		if n := m[st]; n > 0 {
			out = append(out, views.StateCount{State: st, N: n})
		}
	}
	return out
}

// wantsBlock reports whether to answer with the htmx block only: an htmx
// request, but not htmx restoring a page from history, which needs it whole.
func wantsBlock(r *http.Request) bool {
	return isHTMX(r) && r.Header.Get("HX-History-Restore-Request") != "true"
}

// setFlash keeps a one-time confirmation for the page a redirect leads to.
// Flashes are fixed sentences with counts, never personal data.
func (s *Server) setFlash(w http.ResponseWriter, r *http.Request, msg string) {
	sess := s.session(r)
	sess.AddFlash(msg)
	if err := sess.Save(r, w); err != nil {
		s.log.ErrorContext(r.Context(), "save flash", "err", err)
	}
}

// takeFlash returns and clears the pending confirmation, if any.
func (s *Server) takeFlash(w http.ResponseWriter, r *http.Request) string {
	sess := s.session(r)
	fl := sess.Flashes()
	if len(fl) == 0 {
		return ""
	}
	if err := sess.Save(r, w); err != nil {
		s.log.ErrorContext(r.Context(), "clear flash", "err", err)
	}
	msg, _ := fl[len(fl)-1].(string)
	return msg
}

// redirect answers a successful form post: 303 to the next page (PRG).
// htmx follows it with its own headers and swaps the block it gets.
func redirect(w http.ResponseWriter, r *http.Request, to string) error {
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// formFailure reports whether err is one a form shows in place, with the
// submitted values kept: 400 (invalid) and 409 (conflict). Anything else
// goes to the error adapter.
func formFailure(err error) (status int, message string, ok bool) {
	status, _, message = classify(err)
	return status, message, status == http.StatusBadRequest || status == http.StatusConflict
}

// formReader reads single-valued fields of a parsed form, keeping the first
// error (a repeated field).
type formReader struct {
	r   *http.Request
	err error
}

func (f *formReader) get(name string) string {
	v, err := formValue(f.r, name)
	if err != nil && f.err == nil {
		f.err = err
	}
	return v
}

// formInt parses a whole number typed into a form.
func formInt(v, what string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, invalid("The " + what + " must be a whole number.")
	}
	return n, nil
}

// decodeEmptyJSON accepts the empty object a body-less action takes: "{}",
// or no body at all. Any field is unknown, so 400.
func decodeEmptyJSON(r *http.Request) error {
	if r.ContentLength == 0 && r.Header.Get("Content-Type") == "" {
		return nil
	}
	var none struct{}
	return decodeJSON(r, &none)
}

// ---- programs ----

// readProgramForm reads the create-program form.
func readProgramForm(r *http.Request) (views.ProgramForm, store.NewProgram, error) {
	if err := parseForm(r); err != nil {
		return views.ProgramForm{}, store.NewProgram{}, err
	}
	f := &formReader{r: r}
	v := views.ProgramForm{WorkspaceID: f.get("workspaceId"), Slug: f.get("slug"), Purpose: f.get("purpose"),
		QueueCap: f.get("queueCap"), HourlyCap: f.get("hourlyCap"), SeatCap: f.get("seatCap"),
		MaxInvitationDays: f.get("maxInvitationDays")}
	if f.err != nil {
		return v, store.NewProgram{}, f.err
	}
	np := store.NewProgram{WorkspaceID: v.WorkspaceID, Slug: strings.TrimSpace(v.Slug), Purpose: v.Purpose}
	var err error
	for _, n := range []struct {
		dst  *int
		v    string
		what string
	}{{&np.QueueCap, v.QueueCap, "queue cap"}, {&np.HourlyCap, v.HourlyCap, "hourly cap"},
		{&np.SeatCap, v.SeatCap, "seat cap"}, {&np.MaxInvitationDays, v.MaxInvitationDays, "invitation lifetime"}} {
		if *n.dst, err = formInt(n.v, n.what); err != nil {
			return v, np, err
		}
	}
	return v, np, nil
}

// handleCreateProgram is the create-program form: 303 to the new program,
// or /owner again with the values and the message.
func (s *Server) handleCreateProgram(w http.ResponseWriter, r *http.Request) error {
	form, np, err := readProgramForm(r)
	var p *store.Program
	if err == nil {
		p, err = s.db.CreateProgram(r.Context(), ownerActor(r), np)
	}
	if err != nil {
		status, msg, ok := formFailure(err)
		if !ok {
			return err
		}
		v, lerr := s.ownerHomeView(r)
		if lerr != nil {
			return lerr
		}
		form.Error = msg
		v.Create = form
		c := s.chrome(w, r, "Owner console")
		return s.render(w, r, status, c, views.OwnerHome(c, *v))
	}
	s.setFlash(w, r, "Program created. It is closed: publish a notice to open signup.")
	return redirect(w, r, views.OwnerURL("programs", p.ID))
}

// createProgramJSON is POST /api/owner/programs.
type createProgramJSON struct {
	WorkspaceID       string `json:"workspaceId"`
	Slug              string `json:"slug"`
	Purpose           string `json:"purpose"`
	QueueCap          int    `json:"queueCap"`
	HourlyCap         int    `json:"hourlyCap"`
	SeatCap           int    `json:"seatCap"`
	MaxInvitationDays int    `json:"maxInvitationDays"`
}

// handleCreateProgramAPI creates a program: 201 Program.
func (s *Server) handleCreateProgramAPI(w http.ResponseWriter, r *http.Request) error {
	var body createProgramJSON
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	p, err := s.db.CreateProgram(r.Context(), ownerActor(r), store.NewProgram{WorkspaceID: body.WorkspaceID,
		Slug: body.Slug, Purpose: body.Purpose, QueueCap: body.QueueCap, HourlyCap: body.HourlyCap,
		SeatCap: body.SeatCap, MaxInvitationDays: body.MaxInvitationDays})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toProgramJSON(p))
	return nil
}

// handleProgramAPI returns one program.
func (s *Server) handleProgramAPI(w http.ResponseWriter, r *http.Request) error {
	p, err := s.db.ProgramByID(r.Context(), ownerActor(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toProgramJSON(p))
	return nil
}

// patchProgramJSON is PATCH /api/owner/programs/{id}: every field but the
// expected revision is optional.
type patchProgramJSON struct {
	ExpectedRevision *int64 `json:"expectedRevision"`
	SignupOpen       *bool  `json:"signupOpen"`
	AccessEnabled    *bool  `json:"accessEnabled"`
	QueueCap         *int   `json:"queueCap"`
	HourlyCap        *int   `json:"hourlyCap"`
	SeatCap          *int   `json:"seatCap"`
}

// handlePatchProgramAPI changes settings at the expected revision: 200 Program.
func (s *Server) handlePatchProgramAPI(w http.ResponseWriter, r *http.Request) error {
	var body patchProgramJSON
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if body.ExpectedRevision == nil {
		return invalid("expectedRevision is required.")
	}
	p, err := s.db.UpdateProgram(r.Context(), ownerActor(r), r.PathValue("id"), store.ProgramSettings{
		ExpectedRevision: *body.ExpectedRevision, SignupOpen: body.SignupOpen, AccessEnabled: body.AccessEnabled,
		QueueCap: body.QueueCap, HourlyCap: body.HourlyCap, SeatCap: body.SeatCap})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toProgramJSON(p))
	return nil
}

// programPageView loads everything the program page shows, with each form
// filled from the saved state.
func (s *Server) programPageView(r *http.Request, programID string) (*views.ProgramPageView, error) {
	ctx, a := r.Context(), ownerActor(r)
	p, err := s.db.ProgramByID(ctx, a, programID)
	if err != nil {
		return nil, err
	}
	counts, err := s.db.StateCounts(ctx, a, p.ID)
	if err != nil {
		return nil, err
	}
	notices, err := s.db.ProgramNotices(ctx, a, p.ID)
	if err != nil {
		return nil, err
	}
	body, rev, err := s.db.OwnerContent(ctx, a, p.ID)
	if err != nil {
		return nil, err
	}
	assets, err := s.db.ListAssets(ctx, a, p.ID)
	if err != nil {
		return nil, err
	}
	v := &views.ProgramPageView{Program: programSummary(p), Counts: stateCountsView(counts),
		Settings: settingsFormOf(p),
		Notice:   views.NoticeForm{Purpose: p.Purpose},
		Content: views.ContentForm{ExpectedRevision: strconv.FormatInt(rev, 10), Body: body, Saved: body,
			SavedRevision: rev},
		AssetAccept: strings.Join(store.AssetTypes, ","), AssetMaxMiB: store.MaxAssetBytes >> 20,
		RetiredRetention: views.Duration(s.db.RetentionPolicy().RetiredProgram + store.SweepInterval)}
	if len(notices) > 0 {
		// The next version usually repeats the current texts with an edit.
		v.Notice.ContactText, v.Notice.RetentionText = notices[0].ContactText, notices[0].RetentionText
	}
	for _, n := range notices {
		v.Notices = append(v.Notices, views.NoticeView{Version: n.Version, Purpose: n.Purpose,
			ContactText: n.ContactText, RetentionText: n.RetentionText, PublishedAt: n.PublishedAt})
	}
	for _, as := range assets {
		v.Assets = append(v.Assets, views.AssetRow{Name: as.Name, ContentType: as.ContentType, Size: as.Size,
			CreatedAt: as.CreatedAt})
	}
	return v, nil
}

func settingsFormOf(p *store.Program) views.SettingsForm {
	return views.SettingsForm{ExpectedRevision: strconv.FormatInt(p.Revision, 10), SignupOpen: p.SignupOpen,
		AccessEnabled: p.AccessEnabled, QueueCap: strconv.Itoa(p.QueueCap), HourlyCap: strconv.Itoa(p.HourlyCap),
		SeatCap: strconv.Itoa(p.SeatCap)}
}

// renderProgramPage writes the program page with the given status.
func (s *Server) renderProgramPage(w http.ResponseWriter, r *http.Request, status int, v *views.ProgramPageView) error {
	c := s.chrome(w, r, v.Program.Slug)
	return s.render(w, r, status, c, views.ProgramPage(c, *v))
}

// handleProgramPage shows a program's settings, notices, content and files.
func (s *Server) handleProgramPage(w http.ResponseWriter, r *http.Request) error {
	v, err := s.programPageView(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	v.Flash = s.takeFlash(w, r)
	return s.renderProgramPage(w, r, http.StatusOK, v)
}

// rerenderProgram shows the program page again after a failed form, letting
// edit change the form that failed. A non-form error goes to the adapter.
func (s *Server) rerenderProgram(w http.ResponseWriter, r *http.Request, err error, edit func(v *views.ProgramPageView, msg string)) error {
	status, msg, ok := formFailure(err)
	if !ok {
		return err
	}
	v, lerr := s.programPageView(r, r.PathValue("id"))
	if lerr != nil {
		return lerr
	}
	edit(v, msg)
	return s.renderProgramPage(w, r, status, v)
}

// handleProgramSettings is the settings form (PATCH for browsers).
func (s *Server) handleProgramSettings(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(r); err != nil {
		return err
	}
	f := &formReader{r: r}
	form := views.SettingsForm{ExpectedRevision: f.get("expectedRevision"), SignupOpen: f.get("signupOpen") == "yes",
		AccessEnabled: f.get("accessEnabled") == "yes", QueueCap: f.get("queueCap"), HourlyCap: f.get("hourlyCap"),
		SeatCap: f.get("seatCap")}
	err := f.err
	set := store.ProgramSettings{SignupOpen: &form.SignupOpen, AccessEnabled: &form.AccessEnabled}
	if err == nil {
		set.ExpectedRevision, err = strconv.ParseInt(strings.TrimSpace(form.ExpectedRevision), 10, 64)
		if err != nil {
			err = invalid("This form is missing its revision. Reload the page and try again.")
		}
	}
	for _, n := range []struct {
		dst  **int
		v    string
		what string
	}{{&set.QueueCap, form.QueueCap, "queue cap"}, {&set.HourlyCap, form.HourlyCap, "hourly cap"}, {&set.SeatCap, form.SeatCap, "seat cap"}} {
		if err != nil {
			break
		}
		var x int
		if x, err = formInt(n.v, n.what); err == nil {
			*n.dst = &x
		}
	}
	if err == nil {
		_, err = s.db.UpdateProgram(r.Context(), ownerActor(r), r.PathValue("id"), set)
	}
	if err != nil {
		return s.rerenderProgram(w, r, err, func(v *views.ProgramPageView, msg string) {
			// Keep what the owner chose; the hidden revision becomes the
			// current one, so saving again is a deliberate choice made
			// while the saved state is on screen.
			form.Error = msg
			form.ExpectedRevision = v.Settings.ExpectedRevision
			v.Settings = form
		})
	}
	s.setFlash(w, r, "Settings saved.")
	return redirect(w, r, views.OwnerURL("programs", r.PathValue("id")))
}

// newNoticeJSON is POST …/notices.
type newNoticeJSON struct {
	Purpose       string `json:"purpose"`
	ContactText   string `json:"contactText"`
	RetentionText string `json:"retentionText"`
}

// handlePublishNotice is the publish-notice form.
func (s *Server) handlePublishNotice(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(r); err != nil {
		return err
	}
	f := &formReader{r: r}
	form := views.NoticeForm{Purpose: f.get("purpose"), ContactText: f.get("contactText"), RetentionText: f.get("retentionText")}
	err := f.err
	var n *store.Notice
	if err == nil {
		n, err = s.db.PublishNotice(r.Context(), ownerActor(r), r.PathValue("id"), store.NewNotice{Purpose: form.Purpose,
			ContactText: form.ContactText, RetentionText: form.RetentionText})
	}
	if err != nil {
		return s.rerenderProgram(w, r, err, func(v *views.ProgramPageView, msg string) {
			form.Error = msg
			v.Notice = form
		})
	}
	s.setFlash(w, r, "Notice version "+strconv.Itoa(n.Version)+" published; new signups see it from now on.")
	return redirect(w, r, views.OwnerURL("programs", r.PathValue("id")))
}

// handlePublishNoticeAPI publishes the next notice version: 201 notice.
func (s *Server) handlePublishNoticeAPI(w http.ResponseWriter, r *http.Request) error {
	var body newNoticeJSON
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	n, err := s.db.PublishNotice(r.Context(), ownerActor(r), r.PathValue("id"), store.NewNotice{Purpose: body.Purpose,
		ContactText: body.ContactText, RetentionText: body.RetentionText})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toNoticeJSON(n))
	return nil
}

// putContentJSON is PUT …/content; expectedRevision is 0 when there is none yet.
type putContentJSON struct {
	ExpectedRevision *int64 `json:"expectedRevision"`
	Body             string `json:"body"`
}

// handleContent is the private-content form.
func (s *Server) handleContent(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(r); err != nil {
		return err
	}
	f := &formReader{r: r}
	form := views.ContentForm{ExpectedRevision: f.get("expectedRevision"), Body: f.get("body")}
	err := f.err
	var rev int64
	if err == nil {
		if rev, err = strconv.ParseInt(strings.TrimSpace(form.ExpectedRevision), 10, 64); err != nil {
			err = invalid("This form is missing its revision. Reload the page and try again.")
		}
	}
	if err == nil {
		rev, err = s.db.PutContent(r.Context(), ownerActor(r), r.PathValue("id"), rev, form.Body)
	}
	if err != nil {
		return s.rerenderProgram(w, r, err, func(v *views.ProgramPageView, msg string) {
			saved := v.Content
			form.Error = msg
			if store.ErrorCode(err) == store.ECONFLICT {
				// Keep the draft; show the saved text beside it and take its
				// revision, so saving again is a deliberate overwrite.
				form.Conflict, form.Saved, form.SavedRevision = true, saved.Saved, saved.SavedRevision
				form.ExpectedRevision = saved.ExpectedRevision
			}
			v.Content = form
		})
	}
	s.setFlash(w, r, "Private content saved (revision "+strconv.FormatInt(rev, 10)+").")
	return redirect(w, r, views.OwnerURL("programs", r.PathValue("id")))
}

// handlePutContentAPI replaces the private content: 200 {revision}.
func (s *Server) handlePutContentAPI(w http.ResponseWriter, r *http.Request) error {
	var body putContentJSON
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if body.ExpectedRevision == nil {
		return invalid("expectedRevision is required (0 when there is no content yet).")
	}
	rev, err := s.db.PutContent(r.Context(), ownerActor(r), r.PathValue("id"), *body.ExpectedRevision, body.Body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int64{"revision": rev})
	return nil
}

// handleContentAPI returns the private content and its revision, which a
// PUT must name (0 and "" when none is written yet).
func (s *Server) handleContentAPI(w http.ResponseWriter, r *http.Request) error {
	body, rev, err := s.db.OwnerContent(r.Context(), ownerActor(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contentJSON{Body: body, Revision: rev})
	return nil
}

// ---- private assets ----

// errAssetTooLarge is an upload over the asset bound.
var errAssetTooLarge = &httpError{http.StatusRequestEntityTooLarge, "payload_too_large",
	"A file is at most " + strconv.Itoa(store.MaxAssetBytes>>20) + " MiB."}

type multipartKey struct{}

// pendingMultipart is an upload's multipart stream, possibly with its first
// part already read.
type pendingMultipart struct {
	mr    *multipart.Reader
	first *multipart.Part
}

func (p *pendingMultipart) next() (*multipart.Part, error) {
	if p.first != nil {
		part := p.first
		p.first = nil
		return part, nil
	}
	return p.mr.NextPart()
}

// multipartCSRF lets a plain (no-JavaScript) upload form carry its CSRF
// token: the form's first field is "csrf", and this reads only that small
// part and hands it to the CSRF check as the X-CSRF-Token header. The rest
// of the stream is left for the handler, after the owner check, so nothing
// else of the body is read before authentication.
func (s *Server) multipartCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mediaType(r) != "multipart/form-data" {
			next.ServeHTTP(w, r)
			return
		}
		mr, err := r.MultipartReader()
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		pm := &pendingMultipart{mr: mr}
		if part, err := mr.NextPart(); err == nil {
			if part.FormName() == "csrf" && r.Header.Get("X-CSRF-Token") == "" {
				b, _ := io.ReadAll(io.LimitReader(part, 256))
				r.Header.Set("X-CSRF-Token", strings.TrimSpace(string(b)))
			} else {
				pm.first = part
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), multipartKey{}, pm)))
	})
}

// upload is a read private-asset upload.
type upload struct {
	name string
	data []byte
}

// readUpload reads the upload's fields: "file" (required), "name"
// (optional, defaults to the file's own name) and "csrf".
func readUpload(r *http.Request) (*upload, error) {
	pm, _ := r.Context().Value(multipartKey{}).(*pendingMultipart)
	if mediaType(r) != "multipart/form-data" || pm == nil {
		return nil, errContentType
	}
	up := &upload{}
	var filename string
	var gotFile, gotName bool
	for {
		part, err := pm.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, errAssetTooLarge
			}
			return nil, invalid("The upload could not be read.")
		}
		switch part.FormName() {
		case "csrf":
			_, err = io.Copy(io.Discard, io.LimitReader(part, 256))
		case "name":
			if gotName {
				return nil, invalid("The form repeats the field name.")
			}
			gotName = true
			var b []byte
			b, err = io.ReadAll(io.LimitReader(part, 256))
			up.name = strings.TrimSpace(string(b))
		case "file":
			if gotFile {
				return nil, invalid("Upload one file at a time.")
			}
			gotFile = true
			filename = part.FileName()
			up.data, err = io.ReadAll(io.LimitReader(part, store.MaxAssetBytes+1))
			if err == nil && len(up.data) > store.MaxAssetBytes {
				return nil, errAssetTooLarge
			}
		default:
			return nil, invalid("The upload has an unknown field.")
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, errAssetTooLarge
			}
			return nil, invalid("The upload could not be read.")
		}
	}
	if !gotFile || len(up.data) == 0 {
		return nil, invalid("Choose a file to upload.")
	}
	if up.name == "" {
		up.name = assetNameFrom(filename)
	}
	return up, nil
}

// assetNameFrom makes a safe asset name from an uploaded file's name.
func assetNameFrom(filename string) string {
	base := path.Base(strings.ReplaceAll(filename, `\`, "/"))
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.TrimLeft(b.String(), ".")
	if len(name) > 100 {
		name = name[len(name)-100:]
		name = strings.TrimLeft(name, ".")
	}
	return name
}

// sniffAssetType returns the content type the bytes show, if it is one the
// store accepts; the type the client claims is never trusted.
func sniffAssetType(data []byte) (string, error) {
	ct, _, _ := strings.Cut(http.DetectContentType(data), ";")
	for _, ok := range store.AssetTypes {
		if ct == ok {
			return ct, nil
		}
	}
	return "", invalid("Upload a PNG, JPEG, GIF or WebP image, or a PDF.")
}

// storeUpload reads, checks and stores an upload, returning what was stored.
func (s *Server) storeUpload(r *http.Request) (*store.AssetInfo, error) {
	up, err := readUpload(r)
	if err != nil {
		return nil, err
	}
	ct, err := sniffAssetType(up.data)
	if err != nil {
		return nil, err
	}
	a := ownerActor(r)
	if err := s.db.PutAsset(r.Context(), a, r.PathValue("id"), up.name, ct, up.data); err != nil {
		return nil, err
	}
	assets, err := s.db.ListAssets(r.Context(), a, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	for i := range assets {
		if assets[i].Name == up.name {
			return &assets[i], nil
		}
	}
	return nil, errors.New("uploaded asset not read back")
}

// handleUploadAsset is the upload form: 303 to the program page.
func (s *Server) handleUploadAsset(w http.ResponseWriter, r *http.Request) error {
	info, err := s.storeUpload(r)
	if err != nil {
		// Drain what is left so the connection stays usable for the page.
		_, _ = io.Copy(io.Discard, r.Body)
		status, _, _ := classify(err)
		if status == http.StatusRequestEntityTooLarge || status == http.StatusUnsupportedMediaType {
			return s.rerenderAsset(w, r, status, err)
		}
		return s.rerenderProgram(w, r, err, func(v *views.ProgramPageView, msg string) { v.AssetError = msg })
	}
	s.setFlash(w, r, "File "+info.Name+" uploaded ("+views.Bytes(info.Size)+").")
	return redirect(w, r, views.OwnerURL("programs", r.PathValue("id")))
}

// rerenderAsset shows the program page with an upload error whose status
// formFailure does not cover (413, 415).
func (s *Server) rerenderAsset(w http.ResponseWriter, r *http.Request, status int, err error) error {
	v, lerr := s.programPageView(r, r.PathValue("id"))
	if lerr != nil {
		return lerr
	}
	_, _, v.AssetError = classify(err)
	return s.renderProgramPage(w, r, status, v)
}

// handleUploadAssetAPI stores a private asset: 201 {name, contentType, size, createdAt}.
func (s *Server) handleUploadAssetAPI(w http.ResponseWriter, r *http.Request) error {
	info, err := s.storeUpload(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toAssetJSON(*info))
	return nil
}

// handleAssetsAPI lists a program's private assets.
func (s *Server) handleAssetsAPI(w http.ResponseWriter, r *http.Request) error {
	assets, err := s.db.ListAssets(r.Context(), ownerActor(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := make([]assetJSON, 0, len(assets))
	for _, a := range assets {
		out = append(out, toAssetJSON(a))
	}
	writeJSON(w, http.StatusOK, map[string]any{"assets": out})
	return nil
}

// ---- audit log ----

// eventRows converts audit events for the HTML views.
func eventRows(evs []store.Event) []views.EventRow {
	out := make([]views.EventRow, 0, len(evs))
	for _, ev := range evs {
		out = append(out, views.EventRow{ID: ev.ID, Type: ev.Type, ActorKind: string(ev.ActorKind), EntryID: ev.EntryID,
			At: ev.At, Details: sortedDetails(ev.Details)})
	}
	return out
}

// eventsQuery reads ?cursor= and ?limit= of the audit log.
func eventsQuery(r *http.Request) (cursor string, limit int, err error) {
	q, err := singleQuery(r.URL.RawQuery)
	if err != nil {
		return "", 0, err
	}
	if limit, err = pageLimit(q.Get("limit")); err != nil {
		return "", 0, err
	}
	return q.Get("cursor"), limit, nil
}

// handleEventsPage is a page of the program's audit log.
func (s *Server) handleEventsPage(w http.ResponseWriter, r *http.Request) error {
	cursor, limit, err := eventsQuery(r)
	if err != nil {
		return err
	}
	a, id := ownerActor(r), r.PathValue("id")
	p, err := s.db.ProgramByID(r.Context(), a, id)
	if err != nil {
		return err
	}
	page, err := s.db.ProgramEvents(r.Context(), a, id, cursor, limit)
	if err != nil {
		return err
	}
	v := views.EventsView{Program: programSummary(p), Events: eventRows(page.Events)}
	link := func(cursor string) string {
		q := url.Values{}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		if limit != 0 {
			q.Set("limit", strconv.Itoa(limit))
		}
		if len(q) == 0 {
			return views.OwnerURL("programs", p.ID, "events")
		}
		return views.OwnerURL("programs", p.ID, "events") + "?" + q.Encode()
	}
	if page.NextCursor != "" {
		v.NextURL = link(page.NextCursor)
	}
	if cursor != "" {
		v.FirstURL = link("")
	}
	c := s.chrome(w, r, "Audit log · "+p.Slug)
	return s.render(w, r, http.StatusOK, c, views.EventsPage(c, v))
}

// handleEventsAPI is a page of the program's audit log, newest first.
func (s *Server) handleEventsAPI(w http.ResponseWriter, r *http.Request) error {
	cursor, limit, err := eventsQuery(r)
	if err != nil {
		return err
	}
	page, err := s.db.ProgramEvents(r.Context(), ownerActor(r), r.PathValue("id"), cursor, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, eventPageJSON{Events: toEventsJSON(page.Events), NextCursor: nonEmpty(page.NextCursor)})
	return nil
}

// ---- export ----

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

// parseDay parses a UTC date (YYYY-MM-DD) as typed into a date input.
func parseDay(v string) (time.Time, bool) {
	t, err := time.Parse(time.DateOnly, v)
	return t, err == nil
}
