package handlers

import (
	"admit/store"
	"admit/views"
	"net/http"
	"strconv"
	"strings"
)

// programSummary is what every owner page shows about a program.
func programSummary(p *store.Program) views.ProgramSummary {
	return views.ProgramSummary{ID: p.ID, Slug: p.Slug, Name: p.Name, WorkspaceName: p.WorkspaceName, Purpose: p.Purpose, SignupOpen: p.SignupOpen, RetiredAt: p.RetiredAt, EntriesErasedBy: p.EntriesErasedBy,
		AccessEnabled: p.AccessEnabled, Retired: p.RetiredAt != nil, HasContent: p.HasContent, QueueCap: p.QueueCap,
		HourlyCap: p.HourlyCap, SeatCap: p.SeatCap, MaxInvitationDays: p.MaxInvitationDays, Occupied: p.Occupied,
		Revision: p.Revision, CurrentNoticeVersion: p.CurrentNoticeVersion, CreatedAt: p.CreatedAt,
		Retirement: views.RetirementView{Pending: p.Retirement.Pending, Done: p.Retirement.Done,
			Total: p.Retirement.Total, ErasedBy: p.EntriesErasedBy},
		Limits: signupLimits(p)}
}

// signupLimits says which cap refuses signups right now.
func signupLimits(p *store.Program) views.SignupLimits {
	l := views.SignupLimits{QueueFull: p.QueueFull()}
	if p.IntakeUsedUp() {
		l.IntakeUntil = p.IntakeHourEnds
	}
	return l
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

// readProgramForm reads the create-program form.
func readProgramForm(r *http.Request) (views.ProgramForm, store.NewProgram, error) {
	f, err := readForm(r)
	if err != nil {
		return views.ProgramForm{}, store.NewProgram{}, err
	}
	v := views.ProgramForm{WorkspaceID: f.get("workspaceId"), Slug: f.get("slug"), Name: f.get("name"), Purpose: f.get("purpose"),
		QueueCap: f.get("queueCap"), HourlyCap: f.get("hourlyCap"), SeatCap: f.get("seatCap"),
		MaxInvitationDays: f.get("maxInvitationDays")}
	if f.err != nil {
		return v, store.NewProgram{}, f.err
	}
	np := store.NewProgram{WorkspaceID: v.WorkspaceID, Slug: strings.TrimSpace(v.Slug), Name: v.Name, Purpose: v.Purpose}
	if np.Slug == "" {
		// The form's address name may be left empty: it is made from the
		// name.
		if np.Slug = store.SlugFromName(v.Name); np.Slug == "" {
			return v, np, store.Errorf(store.EINVALID, "Choose an address name: the program name has too few letters or digits to make one.")
		}
	}
	for _, n := range []struct {
		dst         *int
		v           string
		what, field string
	}{{&np.QueueCap, v.QueueCap, "queue cap", "queueCap"}, {&np.HourlyCap, v.HourlyCap, "hourly cap", "hourlyCap"},
		{&np.SeatCap, v.SeatCap, "seat cap", "seatCap"}, {&np.MaxInvitationDays, v.MaxInvitationDays, "invitation lifetime", "maxInvitationDays"}} {
		if *n.dst, err = store.WholeNumber(n.v, n.what); err != nil {
			return v, np, onField(err, n.field)
		}
	}
	return v, np, nil
}

// handleCreateProgram is the create-program form: 303 to the new program,
// or /owner again with the values and the message.
func (s *Server) handleCreateProgram(w http.ResponseWriter, r *http.Request) error {
	form, np, err := readProgramForm(r)
	if err != nil {
		return s.rerenderOwnerHome(w, r, err, form)
	}
	p, err := s.db.CreateProgram(r.Context(), ownerActor(r), np)
	if err != nil {
		return s.rerenderOwnerHome(w, r, err, form)
	}
	s.cookieState(r).Flash = "Program created. It is closed: publish a notice, then switch on “Signup open” under Settings."
	// A new program's next step is its notice, in Settings.
	return redirect(w, r, sectionURL(p.ID, views.SectionSettings))
}

// rerenderOwnerHome shows /owner again after a failed create-program form,
// with the submitted values and the message. A non-form error goes to the
// adapter.
func (s *Server) rerenderOwnerHome(w http.ResponseWriter, r *http.Request, err error, form views.ProgramForm) error {
	status, msg, ok := formFailure(err)
	if !ok {
		return err
	}
	v, lerr := s.ownerHomeView(r)
	if lerr != nil {
		return lerr
	}
	// The create form's inputs are named and identified alike.
	form.Error, form.Field = msg, store.ErrorField(err)
	v.Create = form
	c := s.chrome(r, "Owner console")
	return s.render(w, r, status, c, views.OwnerHome(c, *v))
}

// handleCreateProgramAPI creates a program from the store's own input
// (POST /api/owner/programs): 201 Program.
func (s *Server) handleCreateProgramAPI(w http.ResponseWriter, r *http.Request) error {
	var np store.NewProgram
	if err := decodeJSON(r, &np); err != nil {
		return err
	}
	p, err := s.db.CreateProgram(r.Context(), ownerActor(r), np)
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

// patchProgramJSON is PATCH /api/owner/programs/{id}: the store's settings,
// every field optional but the expected revision, which this field (it
// shadows the embedded one) tells missing from 0.
type patchProgramJSON struct {
	store.ProgramSettings
	ExpectedRevision *int64 `json:"expectedRevision"`
}

// handlePatchProgramAPI changes settings at the expected revision: 200 Program.
func (s *Server) handlePatchProgramAPI(w http.ResponseWriter, r *http.Request) error {
	var body patchProgramJSON
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	set := body.ProgramSettings
	var err error
	if set.ExpectedRevision, err = store.RequireRevision(body.ExpectedRevision, ""); err != nil {
		return err
	}
	p, err := s.db.UpdateProgram(r.Context(), ownerActor(r), r.PathValue("id"), set)
	if err != nil {
		return err
	}
	s.forgetQuotes() // the name may have changed
	writeJSON(w, http.StatusOK, toProgramJSON(p))
	return nil
}

// programPageView loads everything the program page shows, in one store
// read, with each form filled from the saved state.
func (s *Server) programPageView(r *http.Request, programID string) (*views.ProgramPageView, error) {
	pg, err := s.db.ProgramPage(r.Context(), ownerActor(r), programID)
	if err != nil {
		return nil, err
	}
	p, counts, notices, body, rev, assets := pg.Program, pg.Counts, pg.Notices, pg.Content, pg.ContentRevision, pg.Assets
	v := &views.ProgramPageView{Program: programSummary(p), Counts: stateCountsView(counts), Glance: glanceView(pg.Stats),
		Settings: settingsFormOf(p), SavedSettings: settingsFormOf(p),
		Notice: views.NoticeForm{Purpose: p.Purpose},
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
	v.Section = programSection(r)
	v.Checklist = goLiveChecklist(r, p, body != "")
	return v, nil
}

// renderProgramPage writes the program page with the given status.
func (s *Server) renderProgramPage(w http.ResponseWriter, r *http.Request, status int, v *views.ProgramPageView) error {
	c := s.chrome(r, sectionTitles[v.Section]+" · "+v.Program.Name)
	return s.render(w, r, status, c, views.ProgramPage(c, *v))
}

// handleProgramPage shows a program's settings, notices, content and files.
// htmx polling a retirement's progress gets the progress block alone, from
// the program's own row.
func (s *Server) handleProgramPage(w http.ResponseWriter, r *http.Request) error {
	if wantsBlock(r) && r.Header.Get("HX-Target") == views.RetireProgressID {
		p, err := s.db.ProgramByID(r.Context(), ownerActor(r), r.PathValue("id"))
		if err != nil {
			return err
		}
		c := s.chrome(r, p.Name)
		return s.render(w, r, http.StatusOK, c, views.RetireProgress(programSummary(p)))
	}
	v, err := s.programPageView(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	v.Flash = s.cookieState(r).takeFlash()
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

// readSettingsForm reads the settings form.
func readSettingsForm(r *http.Request) (views.SettingsForm, store.ProgramSettings, error) {
	f, err := readForm(r)
	if err != nil {
		return views.SettingsForm{}, store.ProgramSettings{}, err
	}
	form := views.SettingsForm{ExpectedRevision: f.get("expectedRevision"), Name: f.get("name"),
		SignupOpen: f.get("signupOpen") == "yes", AccessEnabled: f.get("accessEnabled") == "yes",
		QueueCap: f.get("queueCap"), HourlyCap: f.get("hourlyCap"), SeatCap: f.get("seatCap")}
	open, access := form.SignupOpen, form.AccessEnabled
	set := store.ProgramSettings{SignupOpen: &open, AccessEnabled: &access}
	// The form always carries the name; a client that leaves the field out
	// keeps the name as it is.
	if _, sent := r.PostForm["name"]; sent {
		name := form.Name
		set.Name = &name
	}
	if f.err != nil {
		return form, set, f.err
	}
	if set.ExpectedRevision, err = store.FormRevision(form.ExpectedRevision); err != nil {
		return form, set, err
	}
	for _, n := range []struct {
		dst         **int
		v           string
		what, field string
	}{{&set.QueueCap, form.QueueCap, "queue cap", "queueCap"}, {&set.HourlyCap, form.HourlyCap, "hourly cap", "hourlyCap"},
		{&set.SeatCap, form.SeatCap, "seat cap", "seatCap"}} {
		x, err := store.WholeNumber(n.v, n.what)
		if err != nil {
			return form, set, onField(err, n.field)
		}
		*n.dst = &x
	}
	return form, set, nil
}

// handleProgramSettings is the settings form (PATCH for browsers).
func (s *Server) handleProgramSettings(w http.ResponseWriter, r *http.Request) error {
	form, set, err := readSettingsForm(r)
	failed := func(err error) error {
		return s.rerenderProgram(w, r, err, func(v *views.ProgramPageView, msg string) {
			// Keep what the owner chose, each change marked as not saved
			// beside the value in force (v.SavedSettings); the hidden
			// revision becomes the current one, so saving again is a
			// deliberate choice made while the saved state is on screen.
			form.Error, form.Field = msg, store.ErrorField(err)
			form.ExpectedRevision = v.Settings.ExpectedRevision
			v.Settings = form
		})
	}
	if err != nil {
		return failed(err)
	}
	if _, err := s.db.UpdateProgram(r.Context(), ownerActor(r), r.PathValue("id"), set); err != nil {
		return failed(err)
	}
	s.forgetQuotes() // the name may have changed
	s.cookieState(r).Flash = "Settings saved."
	return redirect(w, r, sectionURL(r.PathValue("id"), programSection(r)))
}
