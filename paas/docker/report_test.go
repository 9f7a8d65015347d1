package docker

import (
	"reflect"
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
	if h, err := d.AppPolicy(paas.App{ID: "declared"}); !reflect.DeepEqual(h, paas.PolicyHint{}) || err != nil {
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

// reaper.traefik=true is the app's ask to be given to Traefik (the hint's
// Traefik); a value that cannot be read counts as false and is an error naming
// the label; a declared app's labels are not read.
func TestDriver_TraefikLabelIsTheAppsHint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	create := func(id string, extra ...string) string {
		name, addr := e.demo(id, nil)
		dockertest.Docker(t, "rm", name)
		args := []string{"create", "--name", name, "-p", addr + ":8080", "--label", "reaper.enable=true",
			"--label", "reaper.app_id=" + id, "--label", "reaper.ready.http=http://" + addr + "/healthz"}
		for _, l := range extra {
			args = append(args, "--label", l)
		}
		dockertest.Docker(t, append(args, e.image, "--listen", ":8080")...)
		return name
	}
	create("shown", "reaper.traefik=true")
	create("plain")
	bad := create("unsure", "reaper.traefik=maybe")
	declared, daddr := e.demo("declared", []string{"--label", "reaper.traefik=true"})
	d := e.driver(Config{Apps: []AppConfig{demoApp("declared", declared, daddr)}})

	if h, err := d.AppPolicy(paas.App{ID: "shown"}); err != nil || !h.Traefik {
		t.Errorf("reaper.traefik=true: %+v, %v; want Traefik", h, err)
	}
	if h, err := d.AppPolicy(paas.App{ID: "plain"}); err != nil || h.Traefik {
		t.Errorf("no label: %+v, %v; want no Traefik", h, err)
	}
	h, err := d.AppPolicy(paas.App{ID: "unsure"})
	if h.Traefik || err == nil || !strings.Contains(err.Error(), `reaper.traefik: "maybe" is not true or false`) || !strings.Contains(err.Error(), bad) {
		t.Errorf("reaper.traefik=maybe: %+v, %v; want no Traefik and an error naming the label and %s", h, err, bad)
	}
	if !strings.Contains(e.logs.String(), "Traefik label cannot be read") {
		t.Error("the unreadable label was not logged")
	}
	if h, err := d.AppPolicy(paas.App{ID: "declared"}); !reflect.DeepEqual(h, paas.PolicyHint{}) || err != nil {
		t.Errorf("a declared app's labels are not read: %+v, %v", h, err)
	}
}

// A discovered app's reaper.busy_url and reaper.busy_max labels, and a
// declared app's busy_url and busy_max, are the app's hint for the engine.
func TestDriver_BusyURLIsTheAppsHint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name, addr := e.demo("busyworker", nil)
	dockertest.Docker(t, "rm", name)
	dockertest.Docker(t, "create", "--name", name, "-p", addr+":8080", "--label", "reaper.enable=true",
		"--label", "reaper.app_id=busyworker", "--label", "reaper.ready.http=http://"+addr+"/healthz",
		"--label", "reaper.busy_url=http://"+addr+"/busy", "--label", "reaper.busy_max=5m",
		e.image, "--listen", ":8080")
	declared, daddr := e.demo("busydeclared", nil)
	app := demoApp("busydeclared", declared, daddr)
	app.BusyURL = "http://" + daddr + "/busy"
	d := e.driver(Config{Apps: []AppConfig{app}})

	if h, err := d.AppPolicy(paas.App{ID: "busyworker"}); err != nil || h.BusyURL != "http://"+addr+"/busy" || h.BusyMax != 5*time.Minute ||
		h.BusyFrom != "label reaper.busy_url of container "+name {
		t.Errorf("labelled: %+v, %v; want its busy_url and 5m, from its label", h, err)
	}
	want := paas.PolicyHint{BusyURL: "http://" + daddr + "/busy", BusyFrom: "config paas.docker.apps[].busy_url"}
	if h, err := d.AppPolicy(paas.App{ID: "busydeclared"}); !reflect.DeepEqual(h, want) || err != nil {
		t.Errorf("declared: %+v, %v; want %+v", h, err, want)
	}
}
