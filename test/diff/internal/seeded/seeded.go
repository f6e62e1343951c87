// Package seeded gives the differential tier's tests their random source
// and case counts, from the -seed and -scale flags every test binary here
// takes: a failing test prints the seed that replays it.
package seeded

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"
)

var (
	seedFlag  = flag.Uint64("seed", 0, "seed for the random inputs (0: a new one each run)")
	scaleFlag = flag.Int("scale", 1, "multiply the number of random cases")
)

// Rand returns the test's random source and makes a failing test print
// the seed that replays it.
func Rand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("random inputs from seed %d: replay with go test -run '^%s$' -seed %d", seed, t.Name(), seed)
		}
	})
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Cases scales a case count by -scale.
func Cases(n int) int { return n * max(*scaleFlag, 1) }
