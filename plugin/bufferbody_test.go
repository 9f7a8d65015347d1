package plugin

import (
	"bytes"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// bufferPlugin buffers the body in the access step and reports what BufferBody said.
type bufferPlugin struct {
	Limit    int64 `yaml:"limit"`
	complete chan bool
}

func (p *bufferPlugin) Provision(ctx ProvisionContext) error {
	p.complete = ctx.Services["complete"].(chan bool)
	return nil
}

func (p *bufferPlugin) ValidateAccess(ex *Exchange) (*Answer, error) {
	ok, err := ex.BufferBody(p.Limit)
	p.complete <- ok
	return nil, err
}

func init() {
	Register(Info{ID: "test_buffer", New: func() Plugin { return &bufferPlugin{} }})
}

func TestBufferBody_SmallIsReadWholeLargeStreamsIntact(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		w.Header().Set("X-Bytes", strconv.FormatInt(n, 10))
		w.Write(h.Sum(nil))
	}))
	defer backend.Close()
	complete := make(chan bool, 1)
	r := mustRouter(t, `
routes:
  - id: a
    frontend: {domains: [a.test]}
    backend: {targets: ["$B"]}
    plugins: [{plugin: test_buffer, config: {limit: 1024}}]
`, map[string]string{"B": backend.URL}, map[string]any{"complete": complete})
	tg := newTestGateway(t, r)
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		whole   bool
	}{
		{"small, with a length", 100, false, true},
		{"small, chunked", 100, true, true},
		{"large, with a length: left unread", 5000, false, false},
		{"large, chunked: its head read, the rest streamed", 5000, true, false},
	} {
		body := bytes.Repeat([]byte("0123456789"), tc.size/10)
		var rd io.Reader = bytes.NewReader(body)
		if tc.chunked {
			rd = struct{ io.Reader }{rd}
		}
		res, got := tg.do(t, "POST", "a.test", "/", nil, rd)
		want := sha256.Sum256(body)
		if res.StatusCode != 200 || got != string(want[:]) || res.Header.Get("X-Bytes") != strconv.Itoa(len(body)) {
			t.Errorf("%s: %d, %s bytes, the body did not arrive intact", tc.name, res.StatusCode, res.Header.Get("X-Bytes"))
		}
		if whole := <-complete; whole != tc.whole {
			t.Errorf("%s: BufferBody said %v, want %v", tc.name, whole, tc.whole)
		}
	}
}
