//go:build !race

package plugin

// raceEnabled: see race_test.go.
const raceEnabled = false
