package handlers

import "testing"

func TestOwnerAPI_QueueSearchAndBulkDecline(t *testing.T) {
	runOwnerScenarios(t, []ownerScenario{
		{name: "search: a whole address, normalised like signup", method: "GET", path: "/api/owner/programs/{demo}/entries?q=w1@EXAMPLE.COM", status: 200,
			has: []string{`"id":"{w1}"`, `"email":"w1@example.com"`, `"nextCursor":null`}, hasNot: []string{`"id":"{w2}"`, `"id":"{s1}"`}},
		{name: "search: the start of a local part, any case", method: "GET", path: "/api/owner/programs/{demo}/entries?q=W", status: 200,
			has: []string{`"id":"{w1}"`, `"id":"{w6}"`}, hasNot: []string{`"id":"{s1}"`}},
		{name: "search: with a state", fixture: selected("{w1}"), method: "GET", path: "/api/owner/programs/{demo}/entries?q=w&state=selected", status: 200,
			has: []string{`"id":"{w1}"`}, hasNot: []string{`"id":"{w2}"`}},
		{name: "search: half an address", method: "GET", path: "/api/owner/programs/{demo}/entries?q=w1@", status: 400},
		{name: "search: no match", method: "GET", path: "/api/owner/programs/{demo}/entries?q=nobody@example.com", status: 200,
			has: []string{`"entries":[]`}},
		{name: "search: another program's entries never match", fixture: betaCreated, method: "GET", path: "/api/owner/programs/{beta}/entries?q=w1@example.com", status: 200,
			has: []string{`"entries":[]`}, hasNot: []string{`"id":"{w1}"`}},
		{name: "bulk decline", method: "POST", path: "/api/owner/programs/{demo}/entries/decline", body: `{"entryIds":["{w4}","{w5}"],"reason":"capacity"}`,
			status: 200, audit: 2, has: []string{`"id":"{w4}"`, `"id":"{w5}"`, `"state":"declined"`}, hasNot: []string{`"state":"waiting"`}},
		{name: "bulk decline: one that cannot declines none", fixture: w3Withdrawn, method: "POST", path: "/api/owner/programs/{demo}/entries/decline",
			body: `{"entryIds":["{w6}","{w3}"],"reason":"capacity"}`, status: 409},
		{name: "bulk decline: a select reason", method: "POST", path: "/api/owner/programs/{demo}/entries/decline", body: `{"entryIds":["{w6}"],"reason":"meets_policy"}`, status: 400},
		{name: "bulk decline: nothing chosen", method: "POST", path: "/api/owner/programs/{demo}/entries/decline", body: `{"entryIds":[],"reason":"capacity"}`, status: 400},
	})
}
