package recorder_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/svc-project/svc/internal/recorder"
)

func TestRecorder_keeps_an_answer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max      int
		handler  http.HandlerFunc
		code     int
		body     string
		ok, over bool
		copyCode int
	}{
		{name: "a JSON answer", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"a":1}`)
		}, code: 201, body: `{"a":1}`, ok: true, copyCode: 201},
		{name: "a write before any code is a 200", handler: func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, "x")
			w.WriteHeader(http.StatusTeapot)
		}, code: 200, body: "x", ok: true, copyCode: 200},
		{name: "an informational code is not the answer's", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusConflict)
		}, code: 409, copyCode: 409},
		{name: "nothing written", handler: func(http.ResponseWriter, *http.Request) {}, code: 0, copyCode: http.StatusBadGateway},
		{name: "past the bound", max: 4, handler: func(w http.ResponseWriter, _ *http.Request) {
			if _, err := fmt.Fprint(w, "abc"); err != nil {
				panic(err)
			}
			if _, err := fmt.Fprint(w, "de"); !errors.Is(err, recorder.ErrTooLarge) {
				panic(fmt.Sprintf("write past the bound: %v", err))
			}
		}, code: 200, body: "abc", ok: true, over: true, copyCode: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := recorder.New(tc.max)
			tc.handler(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code() != tc.code || string(rec.Body()) != tc.body || rec.OK() != tc.ok || rec.TooLarge() != tc.over {
				t.Fatalf("code %d body %q ok %v over %v, want %d %q %v %v", rec.Code(), rec.Body(), rec.OK(), rec.TooLarge(), tc.code, tc.body, tc.ok, tc.over)
			}
			w := httptest.NewRecorder()
			rec.CopyTo(w)
			if w.Code != tc.copyCode || w.Body.String() != tc.body || w.Header().Get("Content-Type") != rec.Header().Get("Content-Type") {
				t.Fatalf("copied: %d %q %v", w.Code, w.Body.String(), w.Header())
			}
		})
	}
}
