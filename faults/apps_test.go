package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reapergw/reaper/internal/testwait"
)

func appServer(t *testing.T) (*appRecorder, string) {
	t.Helper()
	rec := &appRecorder{}
	srv := httptest.NewServer(rec.handler(1, "app_x"))
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

func TestApps_PostChecksTheBodyAgainstItsHash(t *testing.T) {
	rec, url := appServer(t)
	body := bytes.Repeat([]byte("abc"), 30_000)
	sum := sha256.Sum256(body)
	for _, tt := range []struct {
		name, sha string
		ok        bool
	}{{"intact", hex.EncodeToString(sum[:]), true}, {"another body", strings.Repeat("0", 64), false}} {
		req, _ := http.NewRequest(http.MethodPost, url+"/post", bytes.NewReader(body))
		req.Header.Set(headerID, "r1")
		req.Header.Set(headerSHA, tt.sha)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := map[bool]string{true: `"ok":true`, false: `"ok":false`}[tt.ok]; !strings.Contains(string(b), want) || !strings.Contains(string(b), `"app_id":"app_x"`) {
			t.Errorf("%s: answered %s", tt.name, b)
		}
	}
	hits := rec.snapshot()
	if len(hits) != 2 || !hits[0].bodyOK || hits[1].bodyOK || hits[0].bodyBytes != int64(len(body)) || hits[0].id != "r1" || hits[0].ended.IsZero() {
		t.Errorf("hits %+v", hits)
	}
}

func TestApps_DownloadStreamsThePatternOverTime(t *testing.T) {
	rec, url := appServer(t)
	start := time.Now()
	resp, err := http.Get(url + "/download?bytes=100000&ms=160")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(b, downloadPattern(0, 100000)) {
		t.Fatalf("%d bytes, %v", len(b), err)
	}
	if took := time.Since(start); took < 140*time.Millisecond {
		t.Errorf("took %s, want about 160ms", took)
	}
	// The handler records its end once it has returned, a moment after the client
	// has read the last byte.
	testwait.For(t, 5*time.Second, "the download's end at the app", func() bool { return !rec.snapshot()[0].ended.IsZero() })
	if h := rec.snapshot(); len(h) != 1 || h[0].ended.Sub(h[0].arrived) < 140*time.Millisecond {
		t.Errorf("hits %+v", h)
	}
}

func TestApps_WebSocketEchoesAndMonitorsAreKnown(t *testing.T) {
	rec, url := appServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, got, err := c.Read(ctx); err != nil || string(got) != "hello" {
		t.Fatalf("echo %q, %v", got, err)
	}
	c.Close(websocket.StatusNormalClosure, "")

	req, _ := http.NewRequest(http.MethodGet, url+"/health", nil)
	req.Header.Set("User-Agent", "UptimeRobot/2.0")
	req.Header.Set(headerID, "m1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"id":"m1"`) {
		t.Errorf("answer %s", b)
	}
	var monitors int
	for _, h := range rec.snapshot() {
		if h.monitor {
			monitors++
		}
	}
	if monitors != 1 {
		t.Errorf("%d monitor hits, want 1", monitors)
	}
}
