package diff

import (
	"math/rand/v2"
	"testing"

	"github.com/podstart/podstart/test/diff/internal/seeded"
)

// newRand returns the test's random source (seeded.Rand).
func newRand(t *testing.T) *rand.Rand { t.Helper(); return seeded.Rand(t) }

// cases scales a case count by -scale.
func cases(n int) int { return seeded.Cases(n) }

// differences collects disagreements and reports the first few in full.
type differences struct {
	t     *testing.T
	n     int
	shown int
}

func (d *differences) add(format string, args ...any) {
	d.t.Helper()
	d.n++
	if d.shown < 10 {
		d.shown++
		d.t.Errorf(format, args...)
	}
}

func (d *differences) report(total int, what string) {
	d.t.Helper()
	if d.n > 0 {
		d.t.Errorf("%d of %d %s differ from kubelet", d.n, total, what)
	}
}

// pick returns a random element of list.
func pick[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

// tricky are string pieces that exercise encoders: JSON and HTML escapes,
// control bytes, multi-byte runes, U+2028/2029, invalid UTF-8.
var tricky = []string{
	"a", "b", "z", "0", "9", "-", "_", ".", "/", ":", "@", " ",
	"<", ">", "&", `"`, `\`, "\n", "\r", "\t", "\b", "\f", "\x00", "\x01", "\x1f", "\x7f",
	"é", "€", "日本", "😀", "\u2028", "\u2029", "\ufffd", "\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80",
	"nginx", "busybox:1.35", "registry.example.com:5000/team/app", "sha256:", "latest",
}

// trickyString concatenates up to max random pieces.
func trickyString(r *rand.Rand, max int) string {
	n := r.IntN(max + 1)
	s := ""
	for range n {
		s += pick(r, tricky)
	}
	return s
}
