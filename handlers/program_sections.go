package handlers

import (
	"admit/store"
	"admit/views"
	"net/http"
	"strconv"
	"strings"
)

// programSection is the console section a program page request is about:
// the section its path names, or the section of the form it posted.
func programSection(r *http.Request) string {
	switch last := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]; last {
	case "content", "assets":
		return views.SectionContent
	case "settings", "notices", "retire":
		return views.SectionSettings
	}
	return views.SectionOverview
}

// sectionURL is the page of a program's console section.
func sectionURL(programID, section string) string {
	if section == views.SectionOverview {
		return views.OwnerURL("programs", programID)
	}
	return views.OwnerURL("programs", programID, section)
}

// goLiveChecklist is the overview's checklist: a published notice, the
// caps, the workspace's privacy contact, private content, and signup open,
// each linking to where it is done (docs/console.md#sections).
func goLiveChecklist(r *http.Request, p *store.Program, hasContent bool) []views.ChecklistItem {
	settings, content := sectionURL(p.ID, views.SectionSettings), sectionURL(p.ID, views.SectionContent)
	contact := ""
	for _, ws := range workspacesFrom(r.Context()) {
		if ws.ID == p.WorkspaceID {
			contact = ws.Contact
		}
	}
	notice := views.ChecklistItem{Label: "Publish a notice", Done: p.CurrentNoticeVersion > 0, URL: settings + "#notices-title",
		Detail: "none yet: signup cannot open without one"}
	if notice.Done {
		notice.Detail = "version " + strconv.Itoa(p.CurrentNoticeVersion) + " is current"
	}
	caps := views.ChecklistItem{Label: "Set the caps", Done: p.QueueCap > 0 && p.HourlyCap > 0 && p.SeatCap > 0, URL: settings + "#settings-title",
		Detail: strconv.Itoa(p.QueueCap) + " places in the queue, " + strconv.Itoa(p.HourlyCap) + " signups an hour, " +
			strconv.Itoa(p.SeatCap) + " seats"}
	privacy := views.ChecklistItem{Label: "Set the privacy contact", Done: contact != "",
		URL: views.OwnerURL("workspaces", p.WorkspaceID), Detail: "the workspace has none yet"}
	if privacy.Done {
		privacy.Detail = "the workspace's privacy page and signup pages show it"
	}
	priv := views.ChecklistItem{Label: "Write the private content", Done: hasContent, URL: content + "#content-title",
		Detail: "none yet: access cannot be switched on without it"}
	if priv.Done {
		priv.Detail = "saved"
	}
	open := views.ChecklistItem{Label: "Open the waitlist", Done: p.SignupOpen, URL: settings + "#settings-title", Detail: "signup is closed"}
	if open.Done {
		open.Detail = "signup is open"
	}
	return []views.ChecklistItem{notice, caps, privacy, priv, open}
}

func settingsFormOf(p *store.Program) views.SettingsForm {
	return views.SettingsForm{ExpectedRevision: strconv.FormatInt(p.Revision, 10), Name: p.Name, SignupOpen: p.SignupOpen,
		AccessEnabled: p.AccessEnabled, QueueCap: strconv.Itoa(p.QueueCap), HourlyCap: strconv.Itoa(p.HourlyCap),
		SeatCap: strconv.Itoa(p.SeatCap)}
}

// sectionTitles name the program page's sections in the page title.
var sectionTitles = map[string]string{views.SectionOverview: "Overview", views.SectionContent: "Content", views.SectionSettings: "Settings"}

// handleProgramSection is a program's Content or Settings section.
func (s *Server) handleProgramSection(w http.ResponseWriter, r *http.Request) error {
	v, err := s.programPageView(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	v.Flash = s.cookieState(r).takeFlash()
	return s.renderProgramPage(w, r, http.StatusOK, v)
}
