package autotls

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestAsker_200AllowsAnyOtherAnswerRefuses(t *testing.T) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.RawQuery)
		switch r.URL.Query().Get("domain") {
		case "ok.example":
		case "moved.example":
			http.Redirect(w, r, "/elsewhere", http.StatusFound) // followed: not a 200 for the name itself
		default:
			http.Error(w, "no", http.StatusForbidden)
		}
	}))
	defer srv.Close()
	a, err := newAsker(srv.URL+"/ask?token=s3cret", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.allow(t.Context(), "ok.example"); err != nil {
		t.Errorf("200: %v, want allowed", err)
	}
	err = a.allow(t.Context(), "no.example")
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "answered 403 for no.example") {
		t.Errorf("403: %v, want ErrRefused naming the status and the name", err)
	}
	if queries[0] != "domain=ok.example&token=s3cret" {
		t.Errorf("query %q: want the ask URL's own query and domain", queries[0])
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q holds the ask URL's query", err)
	}
}

func TestAsker_UnreachableOrSlowRefusesWithoutTheURL(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer slow.Close()
	defer close(release)
	a, _ := newAsker(slow.URL+"/ask?token=s3cret", 100*time.Millisecond)
	err := a.allow(context.Background(), "x.example")
	if err == nil || errors.Is(err, ErrRefused) {
		t.Fatalf("a slow endpoint: %v, want an error other than ErrRefused", err)
	}
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "x.example") {
		t.Errorf("error %q: want the name, never the URL's query", err)
	}
}

func TestAsker_BoundsTheAsksInFlight(t *testing.T) {
	a, _ := newAsker("http://127.0.0.1:1/ask", time.Second)
	for range maxAsks {
		a.sem <- struct{}{} // every slot taken, as by asks in flight
	}
	err := a.allow(t.Context(), "x.example")
	if err == nil || !strings.Contains(err.Error(), "asks are in flight already") {
		t.Errorf("with every slot taken: %v, want a refusal without asking", err)
	}
}
