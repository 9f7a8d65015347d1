package main

import (
	"errors"
	"slices"
	"testing"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/reaper"
)

// The routes /traefik gives for labels: those managing an app whose hint says
// Traefik, sorted, each once; an app without the hint, or whose hint could not
// be read, gives none; no driver hints, none.
func TestTraefikLabeled_TheRoutesOfTheAppsThatAsk(t *testing.T) {
	fake := paastest.New("web", "api", "db", "odd")
	fake.SetHint("web", paas.PolicyHint{Traefik: true}, nil)
	fake.SetHint("api", paas.PolicyHint{Traefik: true, GracePeriod: 1}, nil)
	fake.SetHint("odd", paas.PolicyHint{}, errors.New(`label reaper.traefik: "maybe" is not true or false`))
	apps := []reaper.ManagedApp{
		{App: paas.App{ID: "api"}, Routes: []string{"api-v2", "api-v1"}},
		{App: paas.App{ID: "db"}, Routes: []string{"db"}},
		{App: paas.App{ID: "odd"}, Routes: []string{"odd"}},
		{App: paas.App{ID: "web"}, Routes: []string{"shared", "web"}},
		{App: paas.App{ID: "web2"}, Routes: []string{"shared"}}, // asks too: "shared" is given once
	}
	fake.SetHint("web2", paas.PolicyHint{Traefik: true}, nil)
	got := traefikLabeled(apps, fake)
	if want := []string{"api-v1", "api-v2", "shared", "web"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := traefikLabeled(apps, nil); got != nil {
		t.Errorf("without a hinting driver: %v, want none", got)
	}
}
