package containerlogs_test

import (
	"bytes"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/containerlogs"
)

// FuzzParseCRILine checks the CRI line parser on any bytes: no panic, and
// a parsed line's content is the end of the raw line, with no newline if
// it is partial. The seed corpus is in testdata/fuzz/FuzzParseCRILine.
func FuzzParseCRILine(f *testing.F) {
	f.Add([]byte("2016-10-06T00:17:09.669794202Z stdout P log content 1\n"))
	f.Add([]byte("2016-10-06T00:17:09.669794203Z stderr F log content 2\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var l containerlogs.Line
		if err := containerlogs.ParseCRILine(raw, &l); err != nil {
			return
		}
		if l.Stream != runtimeapi.Stdout && l.Stream != runtimeapi.Stderr {
			t.Fatalf("stream %q", l.Stream)
		}
		want := raw
		if l.Partial && bytes.HasSuffix(raw, []byte("\n")) {
			want = raw[:len(raw)-1]
		}
		if !bytes.HasSuffix(want, l.Content) || len(l.Content) >= len(want) {
			t.Fatalf("content %q is not the end of %q", l.Content, raw)
		}
		if l.Time.IsZero() {
			t.Fatalf("no time in %q", raw)
		}
	})
}
