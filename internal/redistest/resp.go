package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// Do sends one command to the server on a fresh connection (authenticating first
// when the server has a password) and returns its reply: a status or bulk string as
// is, an integer in decimal, a nil reply as "", an array as its elements joined by
// newlines. A server error reply is returned as an error. It blocks up to 5 s.
//
// Do is for tests that set up or inspect the server (FLUSHALL, TTL, DBSIZE); the code
// under test brings its own client.
func (s *Server) Do(args ...string) (string, error) {
	return command(s.dialer(), s.Addr(), s.opts.Password, 5*time.Second, args...)
}

// ErrReply is wrapped by the errors that carry a server's error reply.
var ErrReply = errors.New("redistest: error reply")

// command runs one command on a new connection to addr, made by dial.
func command(dial func(string, time.Duration) (net.Conn, error), addr, password string, timeout time.Duration, args ...string) (string, error) {
	conn, err := dial(addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	r := bufio.NewReader(conn)
	if password != "" {
		if _, err := conn.Write(encode("AUTH", password)); err != nil {
			return "", err
		}
		if _, err := readReply(r); err != nil {
			return "", fmt.Errorf("AUTH: %w", err)
		}
	}
	if _, err := conn.Write(encode(args...)); err != nil {
		return "", err
	}
	return readReply(r)
}

// encode writes a command as a RESP array of bulk strings.
func encode(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

// readReply reads one RESP2 reply (the server speaks RESP2 until told otherwise).
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("redistest: empty reply line")
	}
	switch kind, rest := line[0], line[1:]; kind {
	case '+', ':':
		return rest, nil
	case '-':
		return "", fmt.Errorf("%w: %s", ErrReply, rest)
	case '$':
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 {
			return "", err // $-1: nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 {
			return "", err
		}
		parts := make([]string, 0, n)
		for range n {
			p, err := readReply(r)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "\n"), nil
	default:
		return "", fmt.Errorf("redistest: unexpected reply %q", line)
	}
}
