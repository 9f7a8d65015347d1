package reaper

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// The reference's clients check that POST …/_reap answers 200: it does, and
// puts the app to sleep; _sleep, reaper's own name, keeps its 202; a refusal
// is a 409 under both names.
func TestAdminAPI_ReapAnswers200(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("a", "b")
		fake.Set("a", paastest.App{State: paas.StateShouldBeUp})
		fake.Set("b", paastest.App{State: paas.StateShouldBeUp})
		e := newEnv(t, fake, "")
		e.route(config("a"))
		e.route(config("b"))
		e.start()
		defer e.stop()
		settle()
		h := (&AdminAPI{Engine: e.engine, Store: e.store}).Handler()

		code, body, _ := call(t, h, "POST", "/api/apps/a/_reap", "")
		if code != 200 || body["sleep_asked"] == nil {
			t.Fatalf("_reap of an idle app: %d %v; want 200 with the sleep asked", code, body)
		}
		code, body, _ = call(t, h, "POST", "/api/apps/b/_sleep", "")
		if code != 202 || body["sleep_asked"] == nil {
			t.Fatalf("_sleep of an idle app: %d %v; want 202 with the sleep asked", code, body)
		}
		settle()
		for _, id := range []string{"a", "b"} {
			if got := fake.Get(id).State; got != paas.StateShouldBeDown || fake.Count("stop", id) != 1 {
				t.Errorf("%s after the sleep: platform %s, %d stops; want one stop", id, got, fake.Count("stop", id))
			}
		}
		for _, action := range []string{"_reap", "_sleep"} {
			code, body, _ = call(t, h, "POST", "/api/apps/a/"+action, "")
			if msg, _ := body["error"].(string); code != 409 || !strings.Contains(msg, "already Down") {
				t.Errorf("%s of a sleeping app: %d %v; want 409 already Down", action, code, body)
			}
		}
	})
}
