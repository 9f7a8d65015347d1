//go:build race

package plugin

// raceEnabled makes the heaviest tests move less data: the race detector slows
// copying loops tenfold, and what they check holds at any size above the bound.
const raceEnabled = true
