package views

import (
	"reflect"
	"testing"

	"admit/store"
)

// storedRow is an audit row as the log page gets it: details read from the
// JSON history holds.
func storedRow(t *testing.T, typ store.EventType, stored string) EventRow {
	t.Helper()
	d, err := store.DecodeEventDetails(string(typ), []byte(stored))
	if err != nil {
		t.Fatalf("decode %s %s: %v", typ, stored, err)
	}
	return EventRow{Type: string(typ), Details: d}
}

const inv = "0190f2a8-7c1e-7b3a-9f00-00000000abcd"

var phraseCases = []struct {
	typ    store.EventType
	stored string
	want   []string
}{
	{store.EventProgramCreated, `{}`, nil},
	{store.EventNoticePublished, `{"version":2}`, []string{"version 2"}},
	{store.EventSignup, `{"noticeVersion":1}`, []string{"under notice version 1"}},
	{store.EventSelected, `{"batch":true,"from":"waiting","reason":"meets_policy"}`, []string{"Meets the selection policy", "in a batch"}},
	{store.EventSelected, `{"from":"waiting","reason":"owner_discretion"}`, []string{"Owner's discretion"}},
	{store.EventDeclined, `{"from":"selected","reason":"capacity"}`, []string{"No capacity", "was selected"}},
	{store.EventDeclined, `{"batch":true,"from":"waiting","reason":"not_eligible"}`, []string{"Not eligible", "in a batch"}},
	{store.EventInviteIssued, `{"invitationId":"` + inv + `"}`, []string{"invitation …0000abcd"}},
	{store.EventDeliveryRecorded, `{"channel":"in_person","invitationId":"` + inv + `"}`, []string{"by in person"}},
	{store.EventInviteRevoked, `{"invitationId":"` + inv + `"}`, nil},
	{store.EventInviteRevoked, `{"cause":"withdrawn"}`, []string{"because the entry was withdrawn"}},
	{store.EventInviteExpired, `{"invitationId":"` + inv + `"}`, []string{"invitation …0000abcd"}},
	{store.EventRedeemed, `{"grantId":"0190f2a8-7c1e-7b3a-9f00-00000000beef","invitationId":"` + inv + `"}`, []string{"invitation …0000abcd"}},
	{store.EventGrantRevoked, `{"grantId":"0190f2a8-7c1e-7b3a-9f00-00000000beef"}`, nil},
	{store.EventGrantRevoked, `{"cause":"withdrawn"}`, []string{"because the entry was withdrawn"}},
	{store.EventWithdrawn, `{"from":"invited","via":"removal_link"}`, []string{"with the private removal link", "was invited"}},
	{store.EventWithdrawn, `{"from":"waiting","via":"applicant"}`, []string{"by the applicant, signed in", "was waiting"}},
	{store.EventWithdrawn, `{"from":"active","via":"applicant_request"}`, []string{"by the owner, at the applicant's request", "was active"}},
	{store.EventContentUpdated, `{"revision":3}`, []string{"revision 3"}},
	{store.EventAssetUploaded, `{"bytes":2048}`, []string{"2.0 KiB"}},
	{store.EventProgramChanged, `{"accessEnabled":false,"hourlyCap":10,"queueCap":100,"renamed":true,"seatCap":5,"signupOpen":true}`,
		[]string{"renamed", "signup open", "access off", "queue cap 100", "10 signups an hour", "5 seats"}},
	{store.EventProgramChanged, `{"accessEnabled":true,"hourlyCap":10,"queueCap":100,"renamed":false,"seatCap":5,"signupOpen":false}`,
		[]string{"signup closed", "access enabled", "queue cap 100", "10 signups an hour", "5 seats"}},
	{store.EventProgramRetired, `{"entries":12,"grantsRevoked":0,"invitationsRevoked":1}`,
		[]string{"12 entries scheduled for erasure", "1 invitations revoked", "0 accesses revoked"}},
	{store.EventQueueExported, `{"rows":40}`, []string{"40 rows"}},
	{store.EventErased, `{"reason":"retention"}`, []string{"its retention period ended"}},
	{store.EventErased, `{"reason":"removal_link"}`, []string{"removed with the private link"}},
}

// TestEventDetailText_SaysEachTypesDetails pins the words of every event
// type's details, as the log shows them.
func TestEventDetailText_SaysEachTypesDetails(t *testing.T) {
	seen := map[store.EventType]bool{}
	for _, tc := range phraseCases {
		seen[tc.typ] = true
		if got := eventDetailText(storedRow(t, tc.typ, tc.stored)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s: %q, want %q", tc.typ, tc.stored, got, tc.want)
		}
	}
	for _, typ := range store.EventTypes {
		if !seen[store.EventType(typ)] {
			t.Errorf("no case for %s", typ)
		}
	}
}

// TestEventDetailText_OlderRowsStillRender: rows written before a key was
// added, with a key no longer written, or with none at all read as the
// details they hold.
func TestEventDetailText_OlderRowsStillRender(t *testing.T) {
	for _, tc := range []struct {
		typ    store.EventType
		stored string
		want   []string
	}{
		{store.EventProgramChanged, `{"accessEnabled":true,"hourlyCap":10,"queueCap":100,"seatCap":5,"signupOpen":true}`,
			[]string{"signup open", "access enabled", "queue cap 100", "10 signups an hour", "5 seats"}},
		{store.EventDeliveryRecorded, `{"invitationId":"` + inv + `"}`, nil},
		{store.EventQueueExported, `{"note":"kept by an older version","rows":3}`, []string{"3 rows"}},
		{store.EventSelected, `{"reason":"meets_policy"}`, []string{"Meets the selection policy"}},
	} {
		if got := eventDetailText(storedRow(t, tc.typ, tc.stored)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s: %q, want %q", tc.typ, tc.stored, got, tc.want)
		}
	}
}

// TestDetailPhrases_EveryEventTypeHasWords: each registered event type's
// details reach a function of their own, not the fallback.
func TestDetailPhrases_EveryEventTypeHasWords(t *testing.T) {
	for _, typ := range store.EventTypes {
		d, err := store.DecodeEventDetails(typ, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := detailPhrases(d); !ok {
			t.Errorf("%s details (%T) have no words in detailPhrases", typ, d)
		}
	}
}
