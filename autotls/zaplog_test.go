package autotls

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/reapergw/reaper/internal/logtest"
)

func TestZapLogger_WritesThroughSlogWithInfoAsDebug(t *testing.T) {
	buf := &logtest.Buffer{}
	zl := zapLogger(buf.Logger(slog.LevelInfo).Handler()).Named("obtain").With(zap.String("identifier", "a.test"))
	zl.Info("lock acquired")
	zl.Warn("retrying", zap.Int("attempt", 2))
	zl.Error("could not get certificate from issuer", zap.Error(errors.New("connection refused")))
	out := buf.String()
	if strings.Contains(out, "lock acquired") {
		t.Errorf("a zap info line reached an info-level log (it is debug):\n%s", out)
	}
	for _, want := range []string{"level=WARN msg=retrying logger=obtain identifier=a.test attempt=2",
		`level=ERROR msg="could not get certificate from issuer" logger=obtain identifier=a.test error="connection refused"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	debug := &logtest.Buffer{}
	zapLogger(debug.Logger(slog.LevelDebug).Handler()).Info("lock acquired")
	if !strings.Contains(debug.String(), "level=DEBUG msg=\"lock acquired\"") {
		t.Errorf("at debug level, zap's info line is missing:\n%s", debug.String())
	}
}
