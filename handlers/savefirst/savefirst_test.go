package savefirst

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestServe_SavesOnceBeforeTheAnswerOrAnswersTheFailureAlone: the save
// runs once, before the status line, its cookies on the answer; a failed
// save leaves nothing of the handler's answer, its headers included.
func TestServe_SavesOnceBeforeTheAnswerOrAnswersTheFailureAlone(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Handler", "1")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("handler's body"))
	})
	failed := func(w http.ResponseWriter, r *http.Request, err error) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("failed: " + err.Error()))
	}
	saves := 0
	w := httptest.NewRecorder()
	Serve(w, httptest.NewRequest("POST", "/", nil), handler, func() ([]*http.Cookie, error) {
		saves++
		return []*http.Cookie{{Name: "c", Value: "v"}}, nil
	}, failed)
	if saves != 1 || w.Code != http.StatusAccepted || w.Body.String() != "handler's body" || w.Header().Get("Set-Cookie") != "c=v" {
		t.Fatalf("saved %d times; %d %q, Set-Cookie %q", saves, w.Code, w.Body, w.Header().Get("Set-Cookie"))
	}

	w = httptest.NewRecorder()
	Serve(w, httptest.NewRequest("POST", "/", nil), handler, func() ([]*http.Cookie, error) {
		return nil, errors.New("no room")
	}, failed)
	if w.Code != http.StatusInternalServerError || w.Body.String() != "failed: no room" || w.Header().Get("X-Handler") != "" {
		t.Fatalf("failed save: %d %q, X-Handler %q", w.Code, w.Body, w.Header().Get("X-Handler"))
	}

	// A handler that writes nothing is saved for when it returns.
	saves = 0
	w = httptest.NewRecorder()
	Serve(w, httptest.NewRequest("GET", "/", nil), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		func() ([]*http.Cookie, error) { saves++; return nil, nil }, failed)
	if saves != 1 {
		t.Fatalf("a silent handler saved %d times", saves)
	}
}
