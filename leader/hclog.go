package leader

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// hclogLogger hands the log lines of the Raft library to the node's slog.Logger, keeping their key/value
// pairs. The level is the slog handler's: SetLevel is ignored.
//
// Raft repeats some warnings and errors several times a second while a peer is down ("failed to heartbeat
// to", every 250 ms with the default timeouts), so a repeat of the same warning or error about the same peer
// within repeatWindow is dropped, and the next one that passes says how many were.
type hclogLogger struct {
	base    *slog.Logger // the node's logger, without name or implied args
	log     *slog.Logger // base with the name and implied args
	name    string
	implied []any
	repeats *repeatFilter // shared by every logger derived from the same root
}

var _ hclog.Logger = (*hclogLogger)(nil)

func newHCLogger(base *slog.Logger, name string, implied ...any) *hclogLogger {
	return derive(base, &repeatFilter{}, name, implied...)
}

func derive(base *slog.Logger, repeats *repeatFilter, name string, implied ...any) *hclogLogger {
	l := base
	if name != "" {
		l = l.With("logger", name)
	}
	if len(implied) > 0 {
		l = l.With(implied...)
	}
	return &hclogLogger{base: base, log: l, name: name, implied: implied, repeats: repeats}
}

func slogLevel(l hclog.Level) (slog.Level, bool) {
	switch l {
	case hclog.Trace:
		return slog.LevelDebug - 4, true
	case hclog.Debug:
		return slog.LevelDebug, true
	case hclog.Info, hclog.NoLevel:
		return slog.LevelInfo, true
	case hclog.Warn:
		return slog.LevelWarn, true
	case hclog.Error:
		return slog.LevelError, true
	default: // hclog.Off
		return 0, false
	}
}

func (h *hclogLogger) Log(level hclog.Level, msg string, args ...any) {
	lvl, ok := slogLevel(level)
	if !ok || !h.log.Enabled(context.Background(), lvl) {
		return
	}
	args = formatArgs(args)
	if lvl >= slog.LevelWarn {
		allowed, dropped := h.repeats.allow(repeatKey(h.name, msg, args), time.Now())
		if !allowed {
			return
		}
		if dropped > 0 {
			args = append(args, "suppressed_repeats", dropped)
		}
	}
	h.log.Log(context.Background(), lvl, msg, args...)
}

// formatArgs renders the hclog.Fmt values that the Raft library passes (a format and its arguments), which
// slog would otherwise print as a raw slice.
func formatArgs(args []any) []any {
	var out []any
	for i, a := range args {
		// Raft's own keys must not clash with slog's: a second "time" key makes
		// log tools lose the line's timestamp.
		if i%2 == 0 {
			if k, ok := a.(string); ok && (k == slog.TimeKey || k == slog.LevelKey || k == slog.MessageKey || k == slog.SourceKey) {
				if out == nil {
					out = slices.Clone(args)
				}
				out[i] = "raft_" + k
				continue
			}
		}
		f, ok := a.(hclog.Format)
		if !ok || len(f) == 0 {
			continue
		}
		format, ok := f[0].(string)
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(args) // the caller's slice stays as it was
		}
		out[i] = fmt.Sprintf(format, f[1:]...)
	}
	if out == nil {
		return args
	}
	return out
}

func (h *hclogLogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogLogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogLogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogLogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogLogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hclogLogger) enabled(level hclog.Level) bool {
	lvl, ok := slogLevel(level)
	return ok && h.log.Enabled(context.Background(), lvl)
}

func (h *hclogLogger) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hclogLogger) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hclogLogger) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hclogLogger) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hclogLogger) IsError() bool { return h.enabled(hclog.Error) }

func (h *hclogLogger) ImpliedArgs() []any { return slices.Clone(h.implied) }

func (h *hclogLogger) With(args ...any) hclog.Logger {
	return derive(h.base, h.repeats, h.name, append(slices.Clone(h.implied), args...)...)
}

func (h *hclogLogger) Name() string { return h.name }

func (h *hclogLogger) Named(name string) hclog.Logger {
	if h.name != "" {
		name = h.name + "." + name
	}
	return h.ResetNamed(name)
}

func (h *hclogLogger) ResetNamed(name string) hclog.Logger {
	return derive(h.base, h.repeats, name, slices.Clone(h.implied)...)
}

func (h *hclogLogger) SetLevel(hclog.Level) {}

func (h *hclogLogger) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if h.enabled(l) {
			return l
		}
	}
	return hclog.Off
}

func (h *hclogLogger) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return slog.NewLogLogger(h.log.Handler(), slog.LevelInfo)
}

func (h *hclogLogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return h.StandardLogger(opts).Writer()
}

const (
	// repeatWindow is how long an identical warning or error is dropped after one was logged.
	repeatWindow = 10 * time.Second
	// maxRepeatKeys bounds the filter's memory; raft's messages are constants, so it is rarely reached.
	maxRepeatKeys = 256
)

// repeatFilter drops repeats of the same line within repeatWindow.
type repeatFilter struct {
	mu   sync.Mutex
	seen map[string]*repeatState
}

type repeatState struct {
	at      time.Time // when the line was last logged
	dropped int       // repeats dropped since
}

// allow reports whether a line with key may be logged at now, and how many repeats were dropped since the
// last one that was.
func (f *repeatFilter) allow(key string, now time.Time) (bool, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen == nil || len(f.seen) >= maxRepeatKeys {
		f.seen = make(map[string]*repeatState)
	}
	st, ok := f.seen[key]
	if !ok {
		f.seen[key] = &repeatState{at: now}
		return true, 0
	}
	if now.Sub(st.at) < repeatWindow {
		st.dropped++
		return false, 0
	}
	dropped := st.dropped
	st.at, st.dropped = now, 0
	return true, dropped
}

// repeatKey identifies a line for the repeat filter: logger name, message and the peer it is about, if any.
func repeatKey(name, msg string, args []any) string {
	key := name + "\x00" + msg
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && k == "peer" {
			key += "\x00" + fmt.Sprint(args[i+1])
		}
	}
	return key
}
