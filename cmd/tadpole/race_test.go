//go:build race

package main

// raceEnabled: the tests run with -race, so TestMain builds the binary
// with it too.
const raceEnabled = true
