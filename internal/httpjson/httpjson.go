// Package httpjson writes the JSON answers of reaper's own HTTP APIs (the admin
// API, the cluster's API): indented for people reading them with curl, never
// cached, and encoded before anything is written, so that a value that cannot be
// encoded gives a 500 rather than half an answer.
package httpjson

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Write answers code with v as JSON.
func Write(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(map[string]string{"error": "the answer could not be encoded: " + err.Error()})
	}
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// Error answers code with {"error": msg}.
func Error(w http.ResponseWriter, code int, msg string) {
	Write(w, code, map[string]string{"error": msg})
}
