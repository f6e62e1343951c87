// Package wiretest serves a runtime over a real unix socket for tests, so
// that every package can run its scenarios both in-process and over CRI's
// gRPC wire with the same code.
package wiretest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// Serve serves rt on a fresh unix socket and returns a client dialled to it
// with opts. Client and server are closed when the test ends.
func Serve(tb testing.TB, rt runtime.Runtime, opts ...runtime.Option) (*runtime.Client, *fake.Server) {
	tb.Helper()
	// Socket paths are limited to 108 bytes; t.TempDir() can be longer.
	dir, err := os.MkdirTemp("", "podstart-wire-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	srv := fake.NewServer(rt)
	endpoint, err := srv.ServeUnix(filepath.Join(dir, "cri.sock"))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := runtime.Dial(ctx, endpoint, append([]runtime.Option{runtime.WithConnectTimeout(10 * time.Second)}, opts...)...)
	if err != nil {
		srv.Stop()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		client.Close()
		srv.Stop()
	})
	return client, srv
}
