package valkeystore

import (
	"context"
	"errors"
	"fmt"
	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/testwait"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/reaper/storetest"
)

// prefixes gives every store of a test binary its own key prefix, so stores that
// share a server never see each other's data.
var prefixes atomic.Int64

func freshPrefix() string { return fmt.Sprintf("test%d:", prefixes.Add(1)) }

// newStore connects to srv with opts (Address and Prefix filled in when empty) and
// closes the store in t.Cleanup.
func newStore(t *testing.T, srv *redistest.Server, opts Options) *Store {
	t.Helper()
	if opts.Address == "" {
		opts.Address = srv.Addr()
	}
	if opts.Prefix == "" {
		opts.Prefix = freshPrefix()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := New(ctx, opts)
	if err != nil {
		t.Fatalf("New(%s): %v", opts.Address, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestStore_Contract(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	storetest.Run(t, func(t *testing.T) reaper.Store {
		return newStore(t, srv, Options{})
	})
}

func TestNew_UnreachableFailsFastNamingTheAddress(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	addr := srv.Addr()
	srv.Stop()
	start := time.Now()
	s, err := New(t.Context(), Options{Address: addr, Password: "hunter2-secret"})
	if err == nil {
		s.Close()
		t.Fatal("New against a stopped server succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("New took %v to fail against a closed port", d)
	}
	if !errors.Is(err, ErrUnreachable) {
		t.Errorf("New = %v, want ErrUnreachable", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "valkeystore: valkey at "+addr+" unreachable: ") {
		t.Errorf("error %q does not start with the address", msg)
	}
	if strings.Contains(msg, "hunter2") {
		t.Errorf("error %q contains the password", msg)
	}
}

func TestNew_NoAddress(t *testing.T) {
	if _, err := New(t.Context(), Options{}); err == nil {
		t.Fatal("New without an address succeeded")
	}
}

func TestNew_CancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := New(ctx, Options{Address: "127.0.0.1:1"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("New with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestPassword_NeverInErrorsOrLogs(t *testing.T) {
	const right, wrong = "right-Pa55word-7f3a", "wrong-Pa55word-c9e1"
	srv := redistest.Start(t, redistest.Options{Password: right})
	var logs logtest.Buffer

	for _, tc := range []struct{ name, password, want string }{
		{"wrong password", wrong, "WRONGPASS"},
		{"no password", "", "NOAUTH"},
	} {
		s, err := New(t.Context(), Options{Address: srv.Addr(), Password: tc.password, Logger: logs.Logger(slog.LevelDebug)})
		if err == nil {
			s.Close()
			t.Fatalf("%s: New succeeded", tc.name)
		}
		msg := err.Error()
		if strings.Contains(msg, right) || strings.Contains(msg, wrong) {
			t.Errorf("%s: the error contains a password: %q", tc.name, msg)
		}
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, srv.Addr()) {
			t.Errorf("%s: error %q; want it to say %s and name %s", tc.name, msg, tc.want, srv.Addr())
		}
	}

	s := newStore(t, srv, Options{Password: right, Logger: logs.Logger(slog.LevelDebug)})
	if err := s.PutRecord(t.Context(), reaper.Record{AppID: "a", Status: reaper.StatusUp}); err != nil {
		t.Fatalf("PutRecord with the right password: %v", err)
	}
	if _, ok, err := s.Record(t.Context(), "a"); err != nil || !ok {
		t.Fatalf("Record with the right password = ok %v, err %v", ok, err)
	}
	// Errors and logs of a server gone away.
	watched := make(chan string, 1)
	s.Watch(t.Context(), func(app string) {
		select {
		case watched <- app:
		default:
		}
	})
	waitWatched(t, s, watched, "a")
	srv.Stop()
	_, _, err := s.Record(t.Context(), "a")
	if err == nil || strings.Contains(err.Error(), right) {
		t.Errorf("Record with the server down = %v; want an error without the password", err)
	}
	waitFor(t, "the watch logs its lost subscription", func() bool {
		return strings.Contains(logs.String(), "lost its subscription")
	})
	srv.Restart()
	waitFor(t, "the watch logs its new subscription", func() bool {
		return strings.Contains(logs.String(), "subscribed again")
	})
	if out := logs.String(); strings.Contains(out, right) || strings.Contains(out, wrong) {
		t.Errorf("the logs contain a password:\n%s", out)
	}
}

// waitFor waits for cond up to 10 s, the bound of every wait on Valkey here.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, 10*time.Second, what, cond)
}

// waitWatched puts app's record on s until got reports app, since a watch takes a
// moment to subscribe.
func waitWatched(t *testing.T, s *Store, got <-chan string, app string) {
	t.Helper()
	i := 0
	waitFor(t, "a notification of "+app, func() bool {
		if err := s.PutRecord(t.Context(), reaper.Record{AppID: app, Status: reaper.StatusUp, Cause: fmt.Sprint(i)}); err != nil {
			t.Logf("PutRecord(%s): %v", app, err)
		}
		i++
		select {
		case a := <-got:
			return a == app
		case <-time.After(100 * time.Millisecond):
			return false
		}
	})
}

// The server is stopped mid-run: every call fails fast and says so; once the
// server is back (with its data, persistence on), the same stores work again, the
// watch resumes and tells about records it may have missed.
func TestOutage_RestartMidRun(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{Persist: true})
	var logs logtest.Buffer
	// A long Timeout, so that a fast failure below cannot be the timeout's doing.
	n1, n2 := twoNodes(t, srv, Options{Logger: logs.Logger(slog.LevelDebug), Timeout: 30 * time.Second})
	got := collect(t.Context(), n2)
	waitWatched(t, n1, got, "before")

	asked := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	ctx := t.Context()
	must(t, n1.AskWake(ctx, "asked", asked, 30*time.Minute))
	must(t, n1.TouchAccess(ctx, map[string]time.Time{"asked": asked}))
	must(t, n1.PutSettings(ctx, reaper.Settings{DryRun: true}))
	held, err := n1.Lock(ctx, "locked", 0, time.Minute)
	must(t, err)
	// Written behind the store's back: no notification; only the resync tells.
	if _, err := srv.Do("HSET", n1.k.records, "direct", `{"app_id":"direct","status":"Up"}`); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	calls := map[string]func(ctx context.Context) error{
		"Record":      func(ctx context.Context) error { _, _, err := n1.Record(ctx, "before"); return err },
		"Records":     func(ctx context.Context) error { _, err := n1.Records(ctx); return err },
		"PutRecord":   func(ctx context.Context) error { return n1.PutRecord(ctx, reaper.Record{AppID: "x"}) },
		"History":     func(ctx context.Context) error { _, _, err := n1.History(ctx, "x", 0, 10); return err },
		"TouchAccess": func(ctx context.Context) error { return n1.TouchAccess(ctx, map[string]time.Time{"x": asked}) },
		"InFlight":    func(ctx context.Context) error { _, err := n1.InFlight(ctx); return err },
		"WakeAsks":    func(ctx context.Context) error { _, err := n1.WakeAsks(ctx); return err },
		"Lock":        func(ctx context.Context) error { _, err := n1.Lock(ctx, "x", 0, time.Minute); return err },
		"Extend":      func(ctx context.Context) error { return held.Extend(ctx, time.Minute) },
		"Settings":    func(ctx context.Context) error { _, err := n1.Settings(ctx); return err },
	}
	for name, call := range calls {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		start := time.Now()
		err := call(ctx)
		cancel()
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s with the server down took %v, want a fast failure", name, d)
		}
		if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "valkey at "+srv.Addr()+" unreachable") {
			t.Errorf("%s with the server down = %v; want ErrUnreachable naming the address", name, err)
		}
	}
	for len(got) > 0 {
		<-got
	}

	srv.Restart()
	expectApp(t, got, "direct") // the watch subscribed again and caught up
	if rec, ok, err := n1.Record(ctx, "before"); err != nil || !ok {
		t.Errorf("Record written before the restart = %+v, ok %v, err %v", rec, ok, err)
	}
	if asks, err := n2.WakeAsks(ctx); err != nil || !asks["asked"].Equal(asked) {
		t.Errorf("WakeAsks after the restart = %v, %v; want the ask kept", asks, err)
	}
	if set, err := n2.Settings(ctx); err != nil || !set.DryRun {
		t.Errorf("Settings after the restart = %+v, %v", set, err)
	}
	if _, err := n2.Lock(ctx, "locked", 0, time.Minute); !errors.Is(err, reaper.ErrLocked) {
		t.Errorf("Lock of a lock held across the restart = %v, want ErrLocked", err)
	}
	must(t, held.Release(ctx)) // the scripts run again on a server that forgot them
	waitWatched(t, n1, got, "after")
	if out := logs.String(); strings.Count(out, "lost its subscription") != 1 {
		t.Errorf("want one log line for the outage, got:\n%s", out)
	}
}

// A server that accepts connections but answers nothing: calls end with their
// context, or with the store's Timeout when the context has no deadline.
func TestOutage_HungServerBoundedByContext(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	s := newStore(t, srv, Options{Timeout: 300 * time.Millisecond})
	srv.Pause()

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := s.Record(ctx, "a")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Record took %v with a 100ms context", d)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Record with its context ended = %v, want context.DeadlineExceeded", err)
	}

	start = time.Now()
	err = s.PutRecord(t.Context(), reaper.Record{AppID: "a"})
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("PutRecord took %v with a 300ms store timeout", d)
	}
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Errorf("PutRecord to a hung server = %v; want ErrUnreachable, no answer within 300ms", err)
	}

	srv.Resume()
	waitFor(t, "the store works again", func() bool {
		return s.PutRecord(t.Context(), reaper.Record{AppID: "a"}) == nil
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestTLS(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{TLS: true})
	// The bounds are generous: on a loaded machine (the race detector, other
	// tests) a TLS handshake can take seconds, and a call or a dial cut short
	// by its bound would fail for the machine's sake, not for the one checked.
	slow := Options{TLS: true, DialTimeout: 30 * time.Second, Timeout: 30 * time.Second}
	trusted := slow
	trusted.TLSConfig = srv.TLSConfig()
	s := newStore(t, srv, trusted)
	must(t, s.PutRecord(t.Context(), reaper.Record{AppID: "a", Status: reaper.StatusUp}))
	if _, ok, err := s.Record(t.Context(), "a"); err != nil || !ok {
		t.Fatalf("Record over TLS = ok %v, err %v", ok, err)
	}

	// Without the test CA, the default verifies against the system roots: refused.
	untrusted := slow
	untrusted.Address = srv.Addr()
	_, err := New(t.Context(), untrusted)
	if err == nil || !strings.Contains(err.Error(), "certificate") || !strings.Contains(err.Error(), srv.Addr()) {
		t.Errorf("New over TLS with an untrusted certificate = %v; want a certificate error naming the address", err)
	}
	t.Logf("untrusted certificate: %v", err)
	// Plain text to a TLS port fails at once (the server closes the
	// connection), not by waiting out the bounds.
	plain := slow
	plain.Address, plain.TLS = srv.Addr(), false
	_, err = New(t.Context(), plain)
	var ne net.Error
	if err == nil || strings.Contains(err.Error(), "no answer within") || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		t.Errorf("New in plain text to a TLS port = %v; want a failure that does not wait for a timeout", err)
	}
	t.Logf("plain text to TLS: %v", err)
}

// A server that refuses the client says why (Redis's protected mode: bound to
// an address other than loopback, without a password, it refuses every client
// that does not come from loopback), and New says what the server said, not
// "unreachable: EOF" (or a reset), which sends the operator looking at the
// network.
func TestNew_ProtectedModeRefusalSaysRedissReason(t *testing.T) {
	ip := nonLoopbackIPv4(t)
	srv := redistest.Start(t, redistest.Options{AlsoBind: []string{ip}})
	_, port, _ := net.SplitHostPort(srv.Addr())
	addr := net.JoinHostPort(ip, port)
	s, err := New(t.Context(), Options{Address: addr})
	if err == nil {
		s.Close()
		t.Fatalf("New from %s (not loopback) to a server in protected mode succeeded", ip)
	}
	msg := err.Error()
	t.Logf("New: %s", msg)
	for _, want := range []string{"valkey at " + addr + " refused the connection: ", "DENIED", "protected mode"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "EOF") || strings.Contains(msg, "reset") {
		t.Errorf("the error still speaks of the closed connection: %s", msg)
	}
	// From loopback the same server answers: the refusal was its reason, not the network's.
	newStore(t, srv, Options{})
}

// nonLoopbackIPv4 is an IPv4 address of this host outside loopback; the test is
// skipped on a host without one.
func nonLoopbackIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Skip("this host has no IPv4 address outside loopback to reach the server from")
	return ""
}
