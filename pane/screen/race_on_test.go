//go:build race

package screen

// raceEnabled shrinks the flood tests: the race detector slows emulation
// tenfold.
const raceEnabled = true
