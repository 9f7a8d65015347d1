package paastest

import (
	"testing"

	"github.com/reapergw/reaper/paas"
)

func TestFake_Contract(t *testing.T) {
	Run(t, func(t *testing.T) Harness {
		f := New("a", "b")
		return Harness{
			Client: f,
			Apps:   [2]paas.App{{ID: "a"}, {ID: "b"}},
			// A change no call made (a crash), announced as the platform would.
			StopOutside: func(_ *testing.T, app paas.App) { f.Set(app.ID, App{State: paas.StateShouldBeDown}) },
		}
	})
}
