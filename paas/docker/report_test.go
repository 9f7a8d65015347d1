package docker

import (
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
)

func TestDriver_GraceLabelIsTheAppsHintAndFollowsARecreatedContainer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name, addr := e.demo("grace", nil)
	recreate := func(grace string) {
		t.Helper()
		dockertest.Docker(t, "rm", "-f", name)
		dockertest.Docker(t, "create", "--name", name, "-p", addr+":8080", "--label", "reaper.enable=true",
			"--label", "reaper.app_id=graced", "--label", "reaper.grace_period="+grace,
			"--label", "reaper.ready.http=http://"+addr+"/healthz", e.image, "--listen", ":8080")
	}
	recreate("2s")
	declared, daddr := e.demo("declared", []string{"--label", "reaper.grace_period=5s"})
	d := e.driver(Config{Apps: []AppConfig{demoApp("declared", declared, daddr)}})
	h, err := d.AppPolicy(paas.App{ID: "graced"})
	if err != nil || h.GracePeriod != 2*time.Second || !strings.Contains(h.From, "reaper.grace_period") || !strings.Contains(h.From, name) {
		t.Fatalf("hint %+v, %v; want 2s from the label of %s", h, err, name)
	}
	if h, err := d.AppPolicy(paas.App{ID: "declared"}); h != (paas.PolicyHint{}) || err != nil {
		t.Errorf("a declared app's labels are not read: %+v, %v", h, err)
	}

	// Recreated with another value (compose up after an edit): the new one.
	recreate("45s")
	testwait.For(t, waitLong, "the new label to be read", func() bool {
		h, err := d.AppPolicy(paas.App{ID: "graced"})
		return err == nil && h.GracePeriod == 45*time.Second
	})

	// Recreated with a value that cannot be read: an error naming the label,
	// and the app is still driven (only reaper's grace period is at stake).
	recreate("soon")
	var last error
	testwait.For(t, waitLong, "the unreadable label to be reported", func() bool {
		_, last = d.AppPolicy(paas.App{ID: "graced"})
		return last != nil
	})
	if !strings.Contains(last.Error(), `reaper.grace_period: "soon" is not a duration`) || !strings.Contains(last.Error(), name) {
		t.Errorf("error %q, want the label, its value and the container", last)
	}
	if !strings.Contains(e.logs.String(), "grace period cannot be read") {
		t.Error("the unreadable label was not logged")
	}
	if err := d.Start(bg, paas.App{ID: "graced"}); err != nil {
		t.Fatalf("start of an app whose grace period label is wrong: %v", err)
	}
	waitState(t, d, "graced", paas.StateShouldBeUp)
}
