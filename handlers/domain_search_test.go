package handlers

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"admit/store"
)

// TestQueueAPI_DomainSearchFindsExactlyThatDomain: q=@uni.edu finds the
// entries at uni.edu, in every state and across pages, and none at a
// subdomain, a longer domain or another domain that ends the same; q=uni.edu
// finds the same and, as documented, local parts that start with it.
func TestQueueAPI_DomainSearchFindsExactlyThatDomain(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	want := []string{
		mustInsertEntry(t, app.DB, app.Demo, "ada@uni.edu", store.StateWaiting),
		mustInsertEntry(t, app.DB, app.Demo, "Bea@UNI.edu", store.StateSelected),
		mustInsertEntry(t, app.DB, app.Demo, "cy@uni.edu", store.StateDeclined),
	}
	for _, other := range []string{"dee@sub.uni.edu", "eve@uni.edu.au", "fay@xuni.edu", "gus@example.com", "uni@other.org"} {
		mustInsertEntry(t, app.DB, app.Demo, other, store.StateWaiting)
	}
	// A local part that starts with the bare term: found by uni.edu (the
	// start of a local part) and never by @uni.edu.
	localPart := mustInsertEntry(t, app.DB, app.Demo, "uni.edu.fan@other.org", store.StateWaiting)
	slices.Sort(want)
	base := "/api/owner/programs/" + app.Demo.ID + "/entries"
	withLocal := append(slices.Clone(want), localPart)
	slices.Sort(withLocal)
	for _, tc := range []struct {
		q    string
		want []string
	}{{"@uni.edu", want}, {"@UNI.EDU", want}, {"uni.edu", withLocal}, {"Uni.Edu", withLocal}} {
		q := tc.q
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 3 {
				t.Fatalf("q=%s: more pages than entries", q)
			}
			path := base + "?limit=2&q=" + url.QueryEscape(q)
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			r := owner.Get(t, path)
			owWantStatus(t, "search "+q, r, http.StatusOK)
			d := owDecode(t, r.Body)
			es, _ := d["entries"].([]any)
			for _, e := range es {
				got = append(got, owStr(owPath(e, "id")))
			}
			cursor = owStr(d["nextCursor"])
			if cursor == "" {
				break
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Fatalf("q=%s found %v, want %v", q, got, tc.want)
		}
	}
	// With a state, only that state's entries at the domain.
	r := owner.Get(t, base+"?state=selected&q=uni.edu")
	if es, _ := owDecode(t, r.Body)["entries"].([]any); len(es) != 1 || !strings.Contains(r.Body, "Bea@uni.edu") {
		t.Fatalf("selected at uni.edu: %s", r.Body)
	}
	// A local-part prefix still finds local parts.
	r = owner.Get(t, base+"?q=uni")
	if es, _ := owDecode(t, r.Body)["entries"].([]any); len(es) != 2 || !strings.Contains(r.Body, "uni.edu.fan@other.org") {
		t.Fatalf("prefix uni: %s", r.Body)
	}
	owWantStatus(t, "a malformed domain", owner.Get(t, base+"?q="+url.QueryEscape("@uni..edu")), http.StatusBadRequest)
}
