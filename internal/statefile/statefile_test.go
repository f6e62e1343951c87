package statefile

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok", "{}")
	exact := write("exact", "12345678")
	over := write("over", "123456789")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// 64 MiB, sparse: refused by its size, not by reading it.
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tests := []struct {
		name    string
		path    string
		want    string
		wantErr error
	}{
		{"regular", ok, "{}", nil},
		{"exactly the cap", exact, "12345678", nil},
		{"one byte over", over, "", ErrTooLarge},
		{"64 MiB", big, "", ErrTooLarge},
		{"symlink not followed", link, "", ErrNotRegular},
		{"FIFO without writer", fifo, "", ErrNotRegular},
		{"directory", dir, "", ErrNotRegular},
		{"absent", filepath.Join(dir, "absent"), "", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A deadline bounds a hang (a blocking open of the FIFO) so
			// that it fails this test rather than the whole binary.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			type result struct {
				b   []byte
				err error
			}
			done := make(chan result, 1)
			go func() {
				b, err := Read(ctx, tt.path, 8)
				done <- result{b, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-ctx.Done():
				t.Fatalf("Read(%s) did not return", tt.path)
			}
			if tt.wantErr != nil {
				if !errors.Is(r.err, tt.wantErr) {
					t.Fatalf("Read = %q, %v; want %v", r.b, r.err, tt.wantErr)
				}
				if r.b != nil {
					t.Errorf("Read returned %d bytes with its error", len(r.b))
				}
				return
			}
			if r.err != nil || string(r.b) != tt.want {
				t.Errorf("Read = %q, %v; want %q", r.b, r.err, tt.want)
			}
		})
	}
}

func TestReadCancelled(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Read(ctx, p, 8); !errors.Is(err, context.Canceled) {
		t.Errorf("Read with a cancelled ctx = %v, want context.Canceled", err)
	}
}

// endless is a file that never ends (one that grows while it is read, or
// reports size 0 as /proc's do), counting what is taken from it.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	clear(p)
	e.n += int64(len(p))
	return len(p), nil
}

// What is read is capped by counted bytes, not by the size fstat gave.
func TestReadLimitedCountsBytes(t *testing.T) {
	for _, max := range []int64{0, 1, 4096, 1 << 20} {
		r := &endless{}
		b, err := readLimited(r, max)
		if !errors.Is(err, ErrTooLarge) || b != nil {
			t.Errorf("max %d: readLimited = %d bytes, %v; want ErrTooLarge", max, len(b), err)
		}
		if r.n > max+1 {
			t.Errorf("max %d: %d bytes read, want at most %d", max, r.n, max+1)
		}
	}
	b, err := readLimited(io.LimitReader(&endless{}, 10), 10)
	if err != nil || len(b) != 10 {
		t.Errorf("readLimited of exactly max = %d bytes, %v", len(b), err)
	}
}
