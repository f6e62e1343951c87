package containerlogs

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// kubeletTailStarts is kubelet's definition, a newline at a time, for
// every n at once (one pass over the file, not one per n: under -race each
// byte read is instrumented): starts[n] is the offset after the (n+1)-th
// newline from the end.
func kubeletTailStarts(b []byte) (starts []int64) {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			starts = append(starts, int64(i)+1)
		}
	}
	return starts
}

// kubeletTailStart is kubelet's answer for n lines: the offset after the
// (n+1)-th newline from the end, or 0.
func kubeletTailStart(starts []int64, n int64) int64 {
	if n < 0 || n >= int64(len(starts)) {
		return 0
	}
	return starts[n]
}

func TestTailStart(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		var sb strings.Builder
		size := r.IntN(3 * tailBlockSize)
		if i%4 == 0 {
			size = r.IntN(40)
		}
		for sb.Len() < size {
			if r.IntN(8) == 0 {
				sb.WriteByte('\n')
			} else {
				sb.WriteString(strings.Repeat("x", r.IntN(1+r.IntN(2000))))
			}
		}
		b := []byte(sb.String())
		nl := int64(bytes.Count(b, []byte{'\n'}))
		starts := kubeletTailStarts(b)
		for _, n := range []int64{-1, 0, 1, 2, nl - 1, nl, nl + 1, r.Int64N(nl + 2), 1 << 62} {
			got, err := tailStart(bytes.NewReader(b), n, int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if want := kubeletTailStart(starts, n); got != want {
				t.Fatalf("tailStart(%d bytes, %d lines) = %d, want %d", len(b), n, got, want)
			}
		}
	}
}
