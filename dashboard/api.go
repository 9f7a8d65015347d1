package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// The dashboard reads and acts through the admin API's own handler, called in
// the process: every rule of the API (and, in a cluster, the forwarding of
// writes to the leader) applies to the dashboard as it does to a script.

// maxAPIAnswer bounds an answer of the admin API held in memory.
const maxAPIAnswer = 8 << 20

// apiError is an answer of the admin API other than a success.
type apiError struct {
	Code int
	Msg  string // the API's "error", or the status text
}

func (e *apiError) Error() string { return strconv.Itoa(e.Code) + ": " + e.Msg }

// errNotFound tells "the API has no such endpoint or object" from a failure.
func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Code == http.StatusNotFound
}

// apiClient calls the admin API handler in the process.
type apiClient struct{ h http.Handler }

// call sends method path with body (JSON-encoded unless nil) and decodes a 2xx
// answer into out (unless nil). Any other answer is an *apiError.
func (c apiClient) call(ctx context.Context, method, path string, body, out any) error {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.RemoteAddr = "dashboard"
	rec := &recorder{header: http.Header{}}
	c.h.ServeHTTP(rec, req)
	if rec.overflow {
		return fmt.Errorf("dashboard: the answer of %s %s is larger than %d bytes", method, path, maxAPIAnswer)
	}
	code := rec.status()
	if code < 200 || code > 299 {
		var e struct {
			Error string `json:"error"`
		}
		msg := http.StatusText(code)
		if json.Unmarshal(rec.buf.Bytes(), &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return &apiError{Code: code, Msg: msg}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(rec.buf.Bytes(), out); err != nil {
		return fmt.Errorf("dashboard: decode %s %s: %w", method, path, err)
	}
	return nil
}

// recorder is the http.ResponseWriter of an in-process call: it keeps the
// answer in memory, bounded.
type recorder struct {
	header   http.Header
	code     int
	buf      bytes.Buffer
	overflow bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.buf.Len()+len(p) > maxAPIAnswer {
		r.overflow = true
		return 0, errors.New("dashboard: answer too large")
	}
	return r.buf.Write(p)
}

func (r *recorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}
