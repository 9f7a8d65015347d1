package load

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func TestReadResponse(t *testing.T) {
	const next = "NEXT"
	tests := []struct {
		name         string
		in           string
		wantStatus   int
		wantReusable bool
		wantErr      error // nil: no error; errAny: some error
		wantRest     string
	}{
		{"content length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" + next, 200, true, nil, next},
		{"zero length", "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n" + next, 200, true, nil, next},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\nX-Trailer: a\r\n\r\n" + next, 200, true, nil, next},
		{"connection close", "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno" + next, 503, false, nil, next},
		{"close delimited", "HTTP/1.1 200 OK\r\n\r\nthe rest of the stream", 200, false, nil, ""},
		{"http 1.0 closes by default", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx" + next, 200, false, nil, next},
		{"http 1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx" + next, 200, true, nil, next},
		{"204 has no body", "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n" + next, 204, true, nil, next},
		{"LF only", "HTTP/1.1 404 Not Found\nContent-Length: 1\n\nx" + next, 404, true, nil, next},
		{"bad status line", "HTTP/2 200\r\n\r\n", 0, false, ErrMalformed, ""},
		{"non-numeric status", "HTTP/1.1 2x0 OK\r\n\r\n", 0, false, ErrMalformed, ""},
		{"bad content length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 200, false, ErrMalformed, ""},
		{"header without colon", "HTTP/1.1 200 OK\r\nbroken\r\n\r\n", 200, false, ErrMalformed, ""},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 200, false, ErrMalformed, ""},
		{"truncated body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 200, false, io.EOF, ""},
		{"truncated header", "HTTP/1.1 200 OK\r\nContent-Le", 200, false, io.ErrUnexpectedEOF, ""},
		{"header too large", "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", maxHeaderLine) + "\r\n\r\n", 200, false, ErrTooLarge, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tt.in), maxHeaderLine)
			status, reusable, err := readResponse(br)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if status != tt.wantStatus || reusable != tt.wantReusable {
				t.Errorf("status %d reusable %v, want %d %v", status, reusable, tt.wantStatus, tt.wantReusable)
			}
			if err == nil {
				rest, _ := io.ReadAll(br)
				if string(rest) != tt.wantRest {
					t.Errorf("left %q unread, want %q", rest, tt.wantRest)
				}
			}
		})
	}
}

// TestRoundTrip_SkipsInterimAnswers plays a server that sends 103 before its 200
// and checks the exact bytes of the request.
func TestRoundTrip_SkipsInterimAnswers(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	req := buildRequest("bench.test", "/x", [][2]string{{"Accept", "application/json"}})
	const wantReq = "GET /x HTTP/1.1\r\nHost: bench.test\r\nAccept: application/json\r\n\r\n"
	if string(req) != wantReq {
		t.Fatalf("request %q, want %q", req, wantReq)
	}
	got := make(chan string, 1)
	go func() {
		defer server.Close()
		buf := make([]byte, len(wantReq))
		_, err := io.ReadFull(server, buf)
		got <- string(buf)
		if err == nil {
			io.WriteString(server, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
		}
	}()
	k := newConn(context.Background(), client, req, 5*time.Second)
	status, reusable, err := k.roundTrip()
	if err != nil || status != 201 || !reusable {
		t.Fatalf("roundTrip = %d %v %v, want 201 reusable", status, reusable, err)
	}
	if r := <-got; r != wantReq {
		t.Errorf("server read %q", r)
	}
}

func TestRoundTrip_EndedContextFailsAtOnce(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	k := newConn(ctx, client, buildRequest("h", "/", nil), time.Hour)
	if _, _, err := k.roundTrip(); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
