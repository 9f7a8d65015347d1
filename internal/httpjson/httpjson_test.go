package httpjson

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, http.StatusConflict, map[string]any{"app_id": "a<b>", "n": 2})
	want := "{\n  \"app_id\": \"a\\u003cb\\u003e\",\n  \"n\": 2\n}\n"
	if rec.Code != http.StatusConflict || rec.Body.String() != want {
		t.Errorf("got %d %q, want 409 %q", rec.Code, rec.Body.String(), want)
	}
	h := rec.Header()
	if h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "no-store" || h.Get("Content-Length") != "43" {
		t.Errorf("headers: %v", h)
	}
}

func TestWrite_AValueThatCannotBeEncodedIs500(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, http.StatusOK, map[string]any{"f": func() {}})
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("status %d, want 500", rec.Code)
	}
	if got := rec.Body.String(); got != `{"error":"the answer could not be encoded: json: unsupported type: func()"}`+"\n" {
		t.Errorf("body %q", got)
	}
}

func TestError(t *testing.T) {
	rec := httptest.NewRecorder()
	Error(rec, http.StatusNotFound, "no such app")
	if rec.Code != http.StatusNotFound || rec.Body.String() != "{\n  \"error\": \"no such app\"\n}\n" {
		t.Errorf("got %d %q", rec.Code, rec.Body.String())
	}
}
