package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Probes that speak the app's own protocol. A database opens its port before it
// can answer a query: Postgres accepts connections while it replays its WAL and
// says "57P03, the database system is starting up"; Redis accepts them while it
// loads its data set and answers "-LOADING". A tcp probe calls both ready too early.

// protoProbeTimeout bounds one protocol probe, connect and answer: a server that
// accepted and answers nothing within it is not ready.
const protoProbeTimeout = 2 * time.Second

// pgCannotConnectNow is the SQLSTATE of a Postgres that is starting up, shutting
// down or in recovery without hot standby (libpq's pg_isready says PQPING_REJECT).
const pgCannotConnectNow = "57P03"

// DefaultPostgresUser is the user named in a postgres probe's startup message
// when ready.username is not set. No password is ever sent: the probe hangs up
// at the authentication request.
const DefaultPostgresUser = "postgres"

// ErrNoAuth is the answer of a redis probe without a password to a server that
// requires one: the server answered, but whether it has loaded its data set
// cannot be told (Redis checks a client's authentication before its loading).
var ErrNoAuth = errors.New("probe: redis answered NOAUTH: the server requires a password and ready.password is not set, so its readiness cannot be told")

// errAuth is a redis probe's failed AUTH; its text is the server's, which never
// holds the password.
type errAuth struct{ answer string }

func (e errAuth) Error() string { return "probe: redis refused the probe's AUTH: " + e.answer }

// postgres probes a Postgres server at addr as libpq's pg_isready does: it sends a
// startup message and reads the first answer. An authentication request, or an
// error other than 57P03, means the server takes connections (Ready); 57P03 means
// not yet (Starting), as does no answer (NotReady); a refused connect is
// Unreached. It hangs up before authenticating.
func (p *Prober) postgres(ctx context.Context, addr, user string) (Result, error) {
	conn, done, err := p.dialProto(ctx, addr)
	if err != nil {
		return Unreached, err
	}
	defer done()
	if user == "" {
		user = DefaultPostgresUser
	}
	fe := pgproto3.NewFrontend(conn, conn)
	fe.Send(&pgproto3.StartupMessage{
		ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters:      map[string]string{"user": user, "database": user, "application_name": "reaper-readiness-probe"},
	})
	if err := fe.Flush(); err != nil {
		return NotReady, err
	}
	msg, err := fe.Receive()
	if err != nil {
		return NotReady, err
	}
	switch m := msg.(type) {
	case *pgproto3.ErrorResponse:
		if m.Code == pgCannotConnectNow {
			return Starting, fmt.Errorf("probe: postgres answered %s: %s", m.Code, m.Message)
		}
		// Any other error (no such role, no pg_hba.conf entry, SSL required) is a
		// server that checks logins: it takes connections.
		return Ready, nil
	case *pgproto3.AuthenticationOk, *pgproto3.AuthenticationCleartextPassword,
		*pgproto3.AuthenticationMD5Password, *pgproto3.AuthenticationSASL,
		*pgproto3.AuthenticationGSS, *pgproto3.NegotiateProtocolVersion:
		return Ready, nil
	}
	return NotReady, fmt.Errorf("probe: postgres answered %T to a startup message", msg)
}

// redis probes a Redis (or Valkey) server at addr: AUTH first when password is
// set, then PING, which must answer PONG. -LOADING (the data set is loading) is
// Starting; -NOAUTH without a password is NotReady with ErrNoAuth; a refused AUTH
// is NotReady with the server's answer.
func (p *Prober) redis(ctx context.Context, addr, username, password string) (Result, error) {
	conn, done, err := p.dialProto(ctx, addr)
	if err != nil {
		return Unreached, err
	}
	defer done()
	var cmd []byte
	if password != "" {
		if username != "" {
			cmd = appendCommand(cmd, "AUTH", username, password)
		} else {
			cmd = appendCommand(cmd, "AUTH", password)
		}
	}
	cmd = appendCommand(cmd, "PING")
	if _, err := conn.Write(cmd); err != nil {
		return NotReady, err
	}
	r := bufio.NewReaderSize(conn, 512)
	if password != "" {
		line, err := readLine(r)
		if err != nil {
			return NotReady, err
		}
		// A loading server accepts AUTH (the command may run while loading).
		if line != "+OK" {
			return NotReady, errAuth{answer: line}
		}
	}
	line, err := readLine(r)
	switch {
	case err != nil:
		return NotReady, err
	case line == "+PONG":
		return Ready, nil
	case strings.HasPrefix(line, "-LOADING"):
		return Starting, fmt.Errorf("probe: redis answered %s to PING", strconv.Quote(line))
	case strings.HasPrefix(line, "-NOAUTH") && password == "":
		return NotReady, ErrNoAuth
	}
	return NotReady, fmt.Errorf("probe: redis answered %s to PING", strconv.Quote(line))
}

// dialProto connects for a protocol probe, with a deadline on the whole exchange
// (protoProbeTimeout, or ctx's end: reaper stopping). done closes the connection.
func (p *Prober) dialProto(ctx context.Context, addr string) (conn net.Conn, done func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, protoProbeTimeout)
	conn, err = p.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	return conn, func() { stop(); cancel(); _ = conn.Close() }, nil
}

// appendCommand encodes a command as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// maxLine bounds a reply line: PONG, OK and errors are short.
const maxLine = 512

// readLine reads one RESP line without its CRLF, at most maxLine bytes.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return "", errors.New("probe: redis answered a line too long")
		}
		return "", err
	}
	s := strings.TrimRight(string(line), "\r\n")
	if len(s) > maxLine {
		s = s[:maxLine]
	}
	return s, nil
}
