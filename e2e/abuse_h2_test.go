package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// HTTP/2 rapid reset (CVE-2023-44487) over TLS: one connection sends 5,000
// HEADERS frames, each followed at once by its RST_STREAM, half for the plain
// route and half for an app asleep whose requests are held (an HTTP/2 request
// waits on a goroutine). net/http bounds the handlers running for one
// connection, and may end it with a GOAWAY; either way the node stays bounded,
// nothing stays held, and a normal HTTP/2 request is answered afterwards. The
// goroutines left are those of an idle node: the dials that the cancelled
// requests asked for were given up, not left waiting behind the backend's
// opening gate.
func abuseRapidReset(t *testing.T, table *abuseTable) {
	const pairs = 5000
	certFile, keyFile, pool := gatewayCert(t, t.TempDir())
	e := startAbuse(t, "  tls: {cert: "+certFile+", key: "+keyFile+"}\n")
	tlsConfig := &tls.Config{RootCAs: pool, ServerName: "tls.test"}
	m := measure(t, e.p, "h2 rapid reset", 1)

	conn, err := tls.Dial("tcp", e.p.gateway, &tls.Config{RootCAs: pool, ServerName: "tls.test", NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	bw := bufio.NewWriterSize(conn, 64<<10)
	var wmu sync.Mutex // the writing framer, used by the attack and to acknowledge settings
	w := http2.NewFramer(bw, nil)
	wmu.Lock()
	bw.WriteString(http2.ClientPreface)
	w.WriteSettings()
	bw.Flush()
	wmu.Unlock()

	// The reader: acknowledges the server's settings, and records its GOAWAY.
	type seen struct {
		goAway    *http2.GoAwayFrame
		responses int // HEADERS the server sent
		resets    int // RST_STREAM the server sent
		end       error
	}
	read := make(chan seen, 1)
	pong := make(chan struct{}, 1)
	go func() {
		var s seen
		r := http2.NewFramer(nil, conn)
		for {
			f, err := r.ReadFrame()
			if err != nil {
				s.end = err
				read <- s
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					wmu.Lock()
					w.WriteSettingsAck()
					bw.Flush()
					wmu.Unlock()
				}
			case *http2.GoAwayFrame:
				if s.goAway == nil {
					s.goAway = f
				}
			case *http2.HeadersFrame:
				s.responses++
			case *http2.RSTStreamFrame:
				s.resets++
			case *http2.PingFrame:
				if f.IsAck() {
					pong <- struct{}{}
				}
			}
		}
	}()

	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	sent := 0
	start := time.Now()
	var werr error
	for i := range pairs {
		host := "hello.localhost"
		if i%2 == 1 {
			host = "flood.test"
		}
		hbuf.Reset()
		enc.WriteField(hpack.HeaderField{Name: ":method", Value: "GET"})
		enc.WriteField(hpack.HeaderField{Name: ":scheme", Value: "https"})
		enc.WriteField(hpack.HeaderField{Name: ":authority", Value: host})
		enc.WriteField(hpack.HeaderField{Name: ":path", Value: fmt.Sprintf("/r/%d", i)})
		enc.WriteField(hpack.HeaderField{Name: "accept", Value: "application/json"})
		id := uint32(2*i + 1)
		wmu.Lock()
		werr = w.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hbuf.Bytes(), EndStream: true, EndHeaders: true})
		if werr == nil {
			werr = w.WriteRSTStream(id, http2.ErrCodeCancel)
		}
		if werr == nil && i%50 == 49 {
			werr = bw.Flush()
		}
		wmu.Unlock()
		if werr != nil {
			break
		}
		sent++
	}
	wmu.Lock()
	if werr == nil {
		werr = bw.Flush()
	}
	wmu.Unlock()
	took := time.Since(start)
	// The server has read everything once it answers a PING sent last (or it
	// ended the connection).
	wmu.Lock()
	w.WritePing(false, [8]byte{1})
	bw.Flush()
	wmu.Unlock()
	var s seen
	select {
	case <-pong:
		conn.Close()
		s = <-read
	case s = <-read:
	case <-time.After(20 * time.Second):
		t.Fatal("the server neither answered a PING nor ended the connection in 20 s")
	}
	goAway := "none"
	if s.goAway != nil {
		goAway = fmt.Sprintf("%v after stream %d", s.goAway.ErrCode, s.goAway.LastStreamID)
	}
	t.Logf("rapid reset: %d of %d HEADERS+RST_STREAM pairs sent in %v (write error: %v); the server answered %d streams, reset %d, GOAWAY: %s; the plain route's backend finished %d requests",
		sent, pairs, took.Round(time.Millisecond), werr, s.responses, s.resets, goAway, e.helloDone.Load())
	if sent < pairs && s.goAway == nil {
		t.Errorf("the connection failed after %d pairs without a GOAWAY: %v", sent, werr)
	}

	// Nothing stays held, and a normal HTTP/2 request is answered.
	e.waitHeld(t, "flood", 0)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "https://"+e.p.gateway+"/", nil)
	req.Host = "hello.localhost"
	asked := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("a normal request after the attack: %v", err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || body != "hello" || resp.ProtoMajor != 2 {
		t.Errorf("a normal request after the attack: %s %d %q", resp.Proto, resp.StatusCode, body)
	}
	t.Logf("a normal HTTP/2 request after the attack answered in %v", time.Since(asked).Round(time.Millisecond))
	client.CloseIdleConnections()
	m.finish(table, 64<<20)
}
