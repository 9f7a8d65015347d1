package plugin

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// resendPlugin asks for its requests to be sent again after a failed attempt,
// up to max attempts, and records what it was asked (the "asked" service).
type resendPlugin struct {
	Max int `yaml:"max"`

	log *resendLog
}

type resendLog struct {
	mu    sync.Mutex
	asked []SendFailure
}

func (p *resendPlugin) Provision(ctx ProvisionContext) error {
	p.log = ctx.Services["asked"].(*resendLog)
	return nil
}

func (p *resendPlugin) ValidateAccess(ex *Exchange) (*Answer, error) {
	ex.ResendOnFailure(func(f SendFailure) (time.Duration, bool) {
		p.log.mu.Lock()
		defer p.log.mu.Unlock()
		f.Err = nil // compared below
		p.log.asked = append(p.log.asked, f)
		return time.Millisecond, f.Attempt < p.Max
	})
	return nil, nil
}

func init() {
	Register(Info{ID: "test_resend", New: func() Plugin { return &resendPlugin{} }})
}

// The gateway asks a request's resend function only about an attempt that failed
// before any byte of the answer, for a request that can be sent again whole; it
// sends it again on a new connection for as long as the function says.
func TestProxy_AResendFunctionIsAskedAboutFailuresBeforeTheAnswer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		first      string // flakyBackend's way of breaking its first connection; "" for a port nobody listens on
		method     string
		size       int
		buffer     bool // the body is read into memory first
		wantStatus int
		wantAsked  []SendFailure
	}{
		{"GET reset before the answer: sent again", "reset", "GET", 0, false, 200,
			[]SendFailure{{Attempt: 1}}},
		{"POST whose body in memory was sent, reset: asked, its body is whole", "reset", "POST", 100, true, 200,
			[]SendFailure{{Attempt: 1}}},
		{"refused: asked until it says no", "", "GET", 0, false, 502,
			[]SendFailure{{Attempt: 1, NeverSent: true}, {Attempt: 2, NeverSent: true}, {Attempt: 3, NeverSent: true}}},
		{"the answer had begun: never asked", "partial", "GET", 0, false, 502, nil},
		{"a streamed body sent: never asked", "reset", "POST", 100, false, 502, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var addr string
			if tc.first == "" {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				addr = ln.Addr().String()
				ln.Close()
			} else {
				addr = startFlakyBackend(t, tc.first).ln.Addr().String()
			}
			log := &resendLog{}
			buffer := ""
			if tc.buffer {
				buffer = "{plugin: test_buffer, config: {limit: 1024}}, "
			}
			r := mustRouter(t, `
routes:
  - id: a
    frontend: {domains: [a.test]}
    backend: {targets: ["http://$B"]}
    plugins: [`+buffer+`{plugin: test_resend, config: {max: 3}}]
`, map[string]string{"B": addr}, map[string]any{"asked": log, "complete": make(chan bool, 1)})
			tg := newTestGateway(t, r)
			var body io.Reader
			if tc.size > 0 {
				body = strings.NewReader(strings.Repeat("x", tc.size))
			}
			res, got := tg.do(t, tc.method, "a.test", "/", nil, body)
			if res.StatusCode != tc.wantStatus {
				t.Errorf("status %d (%.60q), want %d", res.StatusCode, got, tc.wantStatus)
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			if len(log.asked) != len(tc.wantAsked) {
				t.Fatalf("asked %+v, want %+v", log.asked, tc.wantAsked)
			}
			for i := range log.asked {
				if log.asked[i] != tc.wantAsked[i] {
					t.Errorf("asked %+v, want %+v", log.asked, tc.wantAsked)
				}
			}
		})
	}
}
