package handlers

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func mustRequest(tb testing.TB, method, target string) *http.Request {
	tb.Helper()
	return httptest.NewRequest(method, target, nil)
}
