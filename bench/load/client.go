package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// The load generator speaks HTTP/1.1 itself, as wrk does, rather than through
// net/http's client: on a small machine it shares the CPUs with the proxy under
// test, and every microsecond it spends per request is a microsecond the proxy
// cannot have, which blurs the difference between two proxies. It handles what the
// contestants send back: Content-Length, chunked and close-delimited bodies,
// interim 1xx answers and Connection: close.

// Errors of the client. Each one ends the connection; the worker dials again.
var (
	ErrMalformed = errors.New("load: malformed response")
	ErrTooLarge  = errors.New("load: response header too large")
)

// maxHeaderLine bounds one line of a response header (the reader's buffer).
const maxHeaderLine = 16 << 10

// buildRequest returns the bytes of one GET request for host and path. Every
// request of a run is the same, so they are built once.
func buildRequest(host, path string, header [][2]string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\n", path, host)
	for _, h := range header {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// conn is one keep-alive connection: it sends the same request again and again and
// reads each answer whole.
type conn struct {
	ctx     context.Context // the run's: once it ends, no request may block
	c       net.Conn
	br      *bufio.Reader
	req     []byte
	timeout time.Duration
}

func newConn(ctx context.Context, c net.Conn, req []byte, timeout time.Duration) *conn {
	return &conn{ctx: ctx, c: c, br: bufio.NewReaderSize(c, maxHeaderLine), req: req, timeout: timeout}
}

// roundTrip sends the request and reads the answer, body included. It returns the
// status code and whether the connection can carry another request. Any error
// means the connection must be closed.
func (k *conn) roundTrip() (status int, reusable bool, err error) {
	if err := k.c.SetDeadline(time.Now().Add(k.timeout)); err != nil {
		return 0, false, err
	}
	// Checked after setting the deadline: a cancellation that set a past deadline
	// before this one is seen here, and one after it unblocks the reads.
	if err := k.ctx.Err(); err != nil {
		return 0, false, err
	}
	if _, err := k.c.Write(k.req); err != nil {
		return 0, false, err
	}
	for {
		status, reusable, err = readResponse(k.br)
		// An interim answer (100 Continue, 103 Early Hints) is followed by the real one.
		if err != nil || status >= 200 || status == 101 {
			return status, reusable && status != 101, err
		}
	}
}

func (k *conn) close() error { return k.c.Close() }

// readResponse reads one response from br and discards its body. reusable is false
// when the server asked to close or the body ran to the end of the connection.
func readResponse(br *bufio.Reader) (status int, reusable bool, err error) {
	line, err := readLine(br)
	if err != nil {
		return 0, false, err
	}
	// "HTTP/1.1 200 OK": the code is the three digits after the first space.
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, fmt.Errorf("%w: status line %q", ErrMalformed, truncate(line))
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil || status < 100 || status > 999 {
		return 0, false, fmt.Errorf("%w: status line %q", ErrMalformed, truncate(line))
	}
	http10 := line[7] == '0'

	contentLength, chunked, closing := int64(-1), false, http10
	for {
		line, err := readLine(br)
		if err != nil {
			return status, false, err
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return status, false, fmt.Errorf("%w: header line %q", ErrMalformed, truncate(line))
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				return status, false, fmt.Errorf("%w: Content-Length %q", ErrMalformed, truncate(value))
			}
			contentLength = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			if bytes.EqualFold(value, []byte("close")) {
				closing = true
			} else if bytes.EqualFold(value, []byte("keep-alive")) {
				closing = false
			}
		}
	}

	switch {
	case status < 200 || status == 204 || status == 304:
		// No body, whatever the headers say.
	case chunked:
		err = discardChunked(br)
	case contentLength >= 0:
		_, err = br.Discard(int(contentLength))
	default:
		// The body runs to the end of the connection.
		_, err = io.Copy(io.Discard, br)
		return status, false, err
	}
	if err != nil {
		return status, false, err
	}
	return status, !closing, nil
}

// discardChunked reads a chunked body and its trailer.
func discardChunked(br *bufio.Reader) error {
	for {
		line, err := readLine(br)
		if err != nil {
			return err
		}
		sizeText, _, _ := bytes.Cut(line, []byte(";")) // chunk extensions are ignored
		size, err := strconv.ParseInt(string(bytes.TrimSpace(sizeText)), 16, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("%w: chunk size %q", ErrMalformed, truncate(line))
		}
		if size == 0 {
			break
		}
		if _, err := br.Discard(int(size)); err != nil {
			return err
		}
		if line, err := readLine(br); err != nil || len(line) != 0 {
			if err == nil {
				err = fmt.Errorf("%w: no line end after a chunk", ErrMalformed)
			}
			return err
		}
	}
	for { // the trailer, up to its empty line
		line, err := readLine(br)
		if err != nil || len(line) == 0 {
			return err
		}
	}
}

// readLine returns one line without its CRLF (or LF). The slice is valid until the
// next read.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, ErrTooLarge
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}
