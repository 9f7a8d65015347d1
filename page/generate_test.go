package page

import (
	"testing"

	"github.com/reapergw/reaper/internal/templtest"
)

// The committed _templ.go files are what the templ sources generate.
func TestGenerated_IsUpToDate(t *testing.T) { templtest.UpToDate(t) }
