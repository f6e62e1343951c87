package diff

import (
	"testing"

	cdiparser "tags.cncf.io/container-device-interface/pkg/parser"

	"github.com/podstart/podstart/devicemanager"
)

// TestCDINamesAgainstParser compares devicemanager.ValidateCDIName with
// the CDI parser containerd and kubelet's DRA use
// (tags.cncf.io/container-device-interface/pkg/parser.ParseQualifiedName)
// on random names built from the characters that matter.
func TestCDINamesAgainstParser(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	const alphabet = "ab9Z/=.-_: é\x00"
	parts := []string{"vendor.com", "nvidia.com", "class", "gpu", "0", "dev-1", "a:b"}
	for i := 0; i < cases(20000); i++ {
		var b []byte
		if r.IntN(2) == 0 {
			// Near-valid: vendor/class=name with some edits.
			b = []byte(parts[r.IntN(len(parts))] + "/" + parts[r.IntN(len(parts))] + "=" + parts[r.IntN(len(parts))])
			for k := r.IntN(3); k > 0; k-- {
				p := r.IntN(len(b) + 1)
				c := alphabet[r.IntN(len(alphabet))]
				b = append(b[:p], append([]byte{c}, b[p:]...)...)
			}
		} else {
			b = make([]byte, r.IntN(16))
			for k := range b {
				b[k] = alphabet[r.IntN(len(alphabet))]
			}
		}
		name := string(b)
		_, _, _, perr := cdiparser.ParseQualifiedName(name)
		ours := devicemanager.ValidateCDIName(name)
		if (perr == nil) != (ours == nil) {
			d.add("%q: parser %v, podstart %v", name, perr, ours)
		}
	}
}
