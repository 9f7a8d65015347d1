// Package valkeystore is the reaper.Store of a cluster: records, history, access
// times, in-flight counts, wake asks, locks, settings and the webhooks' queues live in Valkey (or Redis 7,
// which speaks the same protocol), shared by every node, and record changes are
// pushed to every node over pub/sub.
//
// Every write that must be atomic (the term fence of PutRecord, the merge by max of
// access times, the compare-and-act of locks) is one Lua script run by the server.
// The layout of the keys, under Options.Prefix (default "reaper:"):
//
//	records              hash   app → record JSON
//	terms                hash   app → Raft term of the stored record (decimal)
//	history:<app>        list   transition JSON, newest first, capped at reaper.HistoryCap
//	access               hash   app → last access, unix microseconds
//	inflight:<node>      hash   app → open requests on node; expires with the node's ttl
//	inflight-nodes       set    nodes that may have in-flight counts
//	asks                 hash   app → time of the latest wake ask, unix microseconds
//	asks-expiry          zset   app → expiry of the ask, unix milliseconds (server clock)
//	lock:<app>           string the holder's random token, with the lock's ttl
//	settings             string Settings JSON
//	queue:<name>         zset   a webhook's queue: event id → position (queue.go)
//	queue-events:<name>  hash   event id → event JSON
//	queue-seq            string the last position given to a queued event
//	records              channel: the id of each app whose record was put or deleted
//
// When Valkey is unreachable, calls fail within Options.Timeout (or their context,
// if sooner) with an error that wraps ErrUnreachable and names the address, and they
// work again once it is back, without a restart. No password appears in an error or
// a log line.
package valkeystore

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/reapergw/reaper/reaper"
)

// Options configures New.
type Options struct {
	// Address is the server's host:port. Required.
	Address string
	// Username and Password authenticate (AUTH); both may be empty. The password
	// never appears in an error or a log line.
	Username string
	Password string
	// TLS connects over TLS, verifying the server's certificate against the system
	// roots and the host of Address, unless TLSConfig says otherwise.
	TLS       bool
	TLSConfig *tls.Config
	// Prefix starts every key and the pub/sub channel, so several reaper clusters
	// can share one server; default "reaper:".
	Prefix string
	// Logger receives the record watch's connection trouble and corrupt records
	// left out of Records; default: discard.
	Logger *slog.Logger
	// DialTimeout bounds the opening of a connection; default 3 s.
	DialTimeout time.Duration
	// Timeout bounds every call, on top of the caller's context, so that a server
	// that accepts connections but does not answer fails calls fast; default 5 s.
	Timeout time.Duration
	// OnError, when set, is told the operation (PutRecord, Lock, …) of every call
	// that fails for another reason than its caller's context (metrics).
	OnError func(op string)
}

// Defaults of Options.
const (
	DefaultPrefix      = "reaper:"
	DefaultDialTimeout = 3 * time.Second
	DefaultTimeout     = 5 * time.Second
)

// Errors of the store, besides those of reaper (ErrStaleTerm, ErrLocked,
// ErrLockLost).
var (
	// ErrUnreachable: the server could not be reached, or did not answer in time.
	// The error's text names the address and the cause.
	ErrUnreachable = errors.New("valkeystore: valkey unreachable")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("valkeystore: store closed")
	// ErrCorrupt: a stored value could not be decoded.
	ErrCorrupt = errors.New("valkeystore: corrupt value")
)

// Store is a reaper.Store in Valkey. All methods are safe for concurrent use; each
// makes one to three round trips to the server and blocks until the answer, the
// end of its context or Options.Timeout, whichever comes first.
type Store struct {
	client   valkey.Client
	addr     string
	password string // only to scrub it from errors
	timeout  time.Duration
	onError  func(op string)
	log      *slog.Logger
	k        keys

	// ctx ends when the store is closed; it bounds the subscription goroutines,
	// counted by wg (the callbacks' goroutines are watch.watchers', whose Close
	// waits for them).
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed sync.Once

	watch watchState // watch.go
}

var (
	_ reaper.Store         = (*Store)(nil)
	_ reaper.RecordWatcher = (*Store)(nil)
)

// keys are the store's key names, computed once from the prefix.
type keys struct {
	records, terms, historyPrefix, access           string
	inflightPrefix, inflightNodes, asks, asksExpiry string
	lockPrefix, settings, channel                   string
	queuePrefix, queueEventsPrefix, queueSeq        string
}

func newKeys(prefix string) keys {
	return keys{
		records:        prefix + "records",
		terms:          prefix + "terms",
		historyPrefix:  prefix + "history:",
		access:         prefix + "access",
		inflightPrefix: prefix + "inflight:",
		inflightNodes:  prefix + "inflight-nodes",
		asks:           prefix + "asks",
		asksExpiry:     prefix + "asks-expiry",
		lockPrefix:     prefix + "lock:",
		settings:       prefix + "settings",
		channel:        prefix + "records",

		queuePrefix:       prefix + "queue:",
		queueEventsPrefix: prefix + "queue-events:",
		queueSeq:          prefix + "queue-seq",
	}
}

// New connects to the server and checks that it answers. It blocks up to
// Options.DialTimeout (or ctx's deadline, if sooner). When the server cannot be
// reached, the error wraps ErrUnreachable and names the address; a refused
// password gives the server's error (WRONGPASS, NOAUTH), never the password.
// Call Close when done.
func New(ctx context.Context, opts Options) (*Store, error) {
	if opts.Address == "" {
		return nil, errors.New("valkeystore: no address")
	}
	opts = opts.withDefaults()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("valkeystore: connect to %s: %w", opts.Address, err)
	}
	copt, err := clientOption(ctx, opts)
	if err != nil {
		return nil, err
	}
	s := &Store{
		addr:     opts.Address,
		password: opts.Password,
		timeout:  opts.Timeout,
		onError:  opts.OnError,
		log:      opts.Logger,
		k:        newKeys(opts.Prefix),
	}
	if err := s.connect(ctx, copt); err != nil {
		return nil, err
	}
	return s, nil
}

// withDefaults returns o with the defaults in place of the fields left empty.
func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// clientOption is the client's configuration. Its dial is bounded by ctx's
// deadline too, because the client dials without a context.
func clientOption(ctx context.Context, opts Options) (valkey.ClientOption, error) {
	dial := opts.DialTimeout
	if dl, ok := ctx.Deadline(); ok {
		dial = max(min(dial, time.Until(dl)), time.Millisecond)
	}
	copt := valkey.ClientOption{
		InitAddress:       []string{opts.Address},
		Username:          opts.Username,
		Password:          opts.Password,
		ClientName:        "reaper",
		ForceSingleClient: true,
		// No client-side caching: records are pushed over pub/sub, and tracking
		// would cost a CLIENT TRACKING per connection for nothing.
		DisableCache: true,
		Dialer:       net.Dialer{Timeout: dial},
		RetryDelay:   retryDelay,
		// The values are small: the default half a megabyte per connection is waste.
		ReadBufferEachConn:  64 << 10,
		WriteBufferEachConn: 64 << 10,
	}
	if opts.TLS {
		tc, err := tlsConfig(opts)
		if err != nil {
			return valkey.ClientOption{}, err
		}
		copt.TLSConfig = tc
	}
	return copt, nil
}

// retryDelay retries read commands once or twice, at once, so that a connection
// broken by a server restart costs nothing; never more, so that calls to a
// server that is down fail fast rather than retrying until the timeout.
func retryDelay(attempts int, _ valkey.Completed, _ error) time.Duration {
	if attempts > 2 {
		return -1
	}
	return 10 * time.Millisecond
}

// tlsConfig is opts.TLSConfig, or else one that verifies the server's
// certificate against the system roots and the host of opts.Address.
func tlsConfig(opts Options) (*tls.Config, error) {
	if opts.TLSConfig != nil {
		return opts.TLSConfig, nil
	}
	host, _, err := net.SplitHostPort(opts.Address)
	if err != nil {
		return nil, fmt.Errorf("valkeystore: address %q: %w", opts.Address, err)
	}
	return &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}, nil
}

// connect opens the client and pings the server, so that New fails when the
// server does not answer. On failure, nothing is left open.
func (s *Store) connect(ctx context.Context, copt valkey.ClientOption) error {
	client, err := valkey.NewClient(copt)
	if err != nil {
		if client != nil {
			client.Close()
		}
		return s.refusedOr(ctx, copt, s.wrap(ctx, ctx, "connect", err))
	}
	s.client = client
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.call(ctx, "connect", func(ctx context.Context) error {
		return client.Do(ctx, client.B().Ping().Build()).Error()
	}); err != nil {
		s.cancel()
		client.Close()
		return s.refusedOr(ctx, copt, err)
	}
	return nil
}

// refusedOr returns err, the failure to connect, unless it is a connection
// closed on the client (EOF, reset) by a server that said why first: a server
// that refuses a client (Redis's protected mode: "DENIED Redis is running in
// protected mode because …") writes its reason as soon as it accepts, then
// closes, and the client, which has sent its HELLO meanwhile, reports only the
// closed connection. Then the error is the server's reason.
func (s *Store) refusedOr(ctx context.Context, copt valkey.ClientOption, err error) error {
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
		return err
	}
	why := serverRefusal(ctx, copt)
	if why == "" {
		return err
	}
	return fmt.Errorf("valkeystore: valkey at %s refused the connection: %s", s.addr, why)
}

// serverRefusal connects to the server as the client does and reads what it says
// before any command: an error reply's text, or "" when it says nothing within
// half a second (or cannot be reached). Bounded to 1 KiB and a second.
func serverRefusal(ctx context.Context, copt valkey.ClientOption) string {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := copt.Dialer.DialContext(ctx, "tcp", copt.InitAddress[0])
	if err != nil {
		return ""
	}
	defer conn.Close()
	if copt.TLSConfig != nil {
		tc := tls.Client(conn, copt.TLSConfig)
		if tc.HandshakeContext(ctx) != nil {
			return ""
		}
		conn = tc
	}
	_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	line, _ := bufio.NewReader(io.LimitReader(conn, 1024)).ReadString('\n')
	if !strings.HasPrefix(line, "-") {
		return ""
	}
	return strings.ToValidUTF8(strings.TrimSpace(line[1:]), "?")
}

// Client is the store's connection to the server, for other data of the node
// that lives beside the store's (acmestore: certificates and their locks). It
// is closed with the store. The caller keeps to keys under its own prefix.
func (s *Store) Client() valkey.Client { return s.client }

// Close stops the watches (waiting for callbacks that are running) and closes the
// connections; calls made after it fail with ErrClosed. Idempotent; always nil.
func (s *Store) Close() error {
	s.closed.Do(func() {
		// Under the watch mutex, so that Watch starts no goroutine once wg.Wait runs.
		s.watch.mu.Lock()
		s.cancel()
		s.watch.mu.Unlock()
		s.watch.watchers.Close()
		s.wg.Wait()
		s.client.Close()
	})
	return nil
}

// call runs f with ctx bounded by the store's timeout, and turns its error into
// one of the store's (see wrap). f returns only the errors of the client: the
// store's own decisions (a stale term, a held lock) are made by the caller from
// what f read.
func (s *Store) call(ctx context.Context, op string, f func(ctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("valkeystore: %s: %w", op, err)
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := f(cctx)
	if err == nil {
		return nil
	}
	if s.onError != nil && ctx.Err() == nil {
		s.onError(op)
	}
	return s.wrap(ctx, cctx, op, err)
}

// wrap classifies err, the failure of op: the caller's context ended; the store is
// closed; the server answered with an error; or the server could not be reached
// (or did not answer within the store's timeout, cctx).
func (s *Store) wrap(ctx, cctx context.Context, op string, err error) error {
	err = s.scrub(err)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("valkeystore: %s: %w", op, ctx.Err())
	case deadlinePassed(ctx):
		// The client compares deadlines with the clock and may fail before the
		// context's own timer has fired.
		return fmt.Errorf("valkeystore: %s: %w", op, context.DeadlineExceeded)
	case s.ctx != nil && s.ctx.Err() != nil:
		return fmt.Errorf("valkeystore: %s: %w", op, ErrClosed)
	}
	if cctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return &unreachableError{addr: s.addr, op: op, err: fmt.Errorf("no answer within %v: %w", s.timeout, err)}
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, valkey.ErrClosing) {
		return &unreachableError{addr: s.addr, op: op, err: err}
	}
	// The server answered, with an error (WRONGPASS, OOM, a script error) or a
	// reply of an unexpected shape.
	return fmt.Errorf("valkeystore: %s: valkey at %s: %w", op, s.addr, err)
}

func deadlinePassed(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// scrub removes the password from err's text, should a layer below ever quote it.
// The chain is lost then: a secret matters more than errors.Is.
func (s *Store) scrub(err error) error {
	if s.password == "" || !strings.Contains(err.Error(), s.password) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), s.password, "[redacted]"))
}

// unreachableError is a failure to reach the server.
type unreachableError struct {
	addr, op string
	err      error
}

func (e *unreachableError) Error() string {
	return "valkeystore: valkey at " + e.addr + " unreachable: " + e.op + ": " + e.err.Error()
}

func (e *unreachableError) Unwrap() error        { return e.err }
func (e *unreachableError) Is(target error) bool { return target == ErrUnreachable }
