package containerlogs_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/containerlogs"
)

// tenMBLog writes a 10 MB CRI log of 100-byte lines, a third of them in
// two partial parts.
func tenMBLog(b *testing.B) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "0.log")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for size, i := 0, 0; size < 10<<20; i++ {
		tag := "F"
		if i%3 == 0 {
			tag = "P"
		}
		n, err := fmt.Fprintf(f, "2026-11-26T17:00:%02d.%09dZ stdout %s line %08d %s\n", i%60, i, tag, i, "0123456789012345678901234567890123456789")
		if err != nil {
			b.Fatal(err)
		}
		size += n
	}
	return p
}

// BenchmarkReadLogsTail reads the last lines of a 10 MB log: the tail is
// found reading backwards, so the time and memory go with the lines
// asked for, not the file.
func BenchmarkReadLogsTail(b *testing.B) {
	p := tenMBLog(b)
	for _, tail := range []int64{10, 1000, 100000, 1 << 62} {
		b.Run(fmt.Sprintf("tail=%d", tail), func(b *testing.B) {
			opts := containerlogs.LogOptions{TailLines: ptr.To(tail), Timestamp: true}
			b.ReportAllocs()
			for b.Loop() {
				if err := containerlogs.ReadLogs(context.Background(), p, "", opts, nil, io.Discard, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadLogsLimit reads a whole 10 MB log under a huge limitBytes:
// memory does not grow with the limit nor the file.
func BenchmarkReadLogsLimit(b *testing.B) {
	p := tenMBLog(b)
	opts := containerlogs.LogOptions{LimitBytes: ptr.To[int64](1 << 62)}
	b.ReportAllocs()
	for b.Loop() {
		if err := containerlogs.ReadLogs(context.Background(), p, "", opts, nil, io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
