package process

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Bounds of one readiness probe. Apps usually listen on loopback, where a connect is
// accepted or refused at once; the bounds matter for an app that accepts but hangs.
const (
	tcpProbeTimeout  = time.Second
	httpProbeTimeout = 2 * time.Second
)

// prober runs readiness probes. One is shared by all apps of a driver.
type prober struct {
	dialer net.Dialer
	client *http.Client
}

func newProber() *prober {
	p := &prober{dialer: net.Dialer{Timeout: tcpProbeTimeout}}
	p.client = &http.Client{
		Transport: &http.Transport{
			// No proxy: reaper's environment may name one, and a probe must reach
			// the app itself.
			Proxy:       nil,
			DialContext: p.dialer.DialContext,
			// A kept-alive connection would stay open on the app after it is
			// ready, for nothing.
			DisableKeepAlives:     true,
			TLSHandshakeTimeout:   httpProbeTimeout,
			ResponseHeaderTimeout: httpProbeTimeout,
		},
		Timeout: httpProbeTimeout,
		// A redirect is an answer: the app is serving.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return p
}

// ready probes once: a TCP connect to tcpAddr, or a GET of httpURL answered below
// 500. It blocks for at most the probe timeout or until ctx ends.
func (p *prober) ready(ctx context.Context, tcpAddr, httpURL string) bool {
	if tcpAddr != "" {
		conn, err := p.dialer.DialContext(ctx, "tcp", tcpAddr)
		if err != nil {
			return false
		}
		_ = conn.Close()
		return true
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, httpURL, nil)
	if err != nil {
		return false
	}
	req.Header.Set("User-Agent", "reaper-readiness-probe")
	resp, err := p.client.Do(req)
	if err != nil {
		return false
	}
	// The body is not read: the status is the answer, and the connection is not
	// reused.
	_ = resp.Body.Close()
	return resp.StatusCode < 500
}

// close releases the probe client's resources.
func (p *prober) close() {
	p.client.CloseIdleConnections()
}
