package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/podstart/podstart/internal/wiretest"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// A call the runtime never answers ends with ErrDeadlineExceeded once the
// call timeout has passed, though no gRPC deadline is sent, and the
// runtime's side of the call is cancelled too; calls before and after it
// are not disturbed.
func TestCallTimeoutEndsAHungCall(t *testing.T) {
	f := fake.New()
	c, _ := wiretest.Serve(t, f, runtime.WithCallTimeout(200*time.Millisecond))
	ctx := context.Background()
	if _, err := c.Version(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	entered, release := f.Hang("ContainerStatus")
	done := make(chan error, 1)
	go func() {
		_, err := c.ContainerStatus(ctx, "x", false)
		done <- err
	}()
	<-entered
	err := <-done
	release()
	if !errors.Is(err, runtime.ErrDeadlineExceeded) {
		t.Fatalf("ContainerStatus = %v, want ErrDeadlineExceeded", err)
	}
	var re *runtime.Error
	if !errors.As(err, &re) || re.Code != codes.DeadlineExceeded {
		t.Fatalf("ContainerStatus = %#v, want code DeadlineExceeded", err)
	}
	if _, err := c.Version(ctx, "v1"); err != nil {
		t.Fatalf("Version after the timeout = %v", err)
	}
}

// The caller's own cancellation stays ErrCanceled, and its own deadline,
// shorter than the call timeout, ErrDeadlineExceeded.
func TestCallTimeoutKeepsTheCallersContext(t *testing.T) {
	f := fake.New()
	c, _ := wiretest.Serve(t, f, runtime.WithCallTimeout(time.Minute))
	_, release := f.Hang("ContainerStatus")
	defer release()

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		cancel()
	}()
	if _, err := c.ContainerStatus(ctx, "x", false); !errors.Is(err, runtime.ErrCanceled) {
		t.Fatalf("cancelled ContainerStatus = %v, want ErrCanceled", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	if _, err := c.ContainerStatus(dctx, "x", false); !errors.Is(err, runtime.ErrDeadlineExceeded) {
		t.Fatalf("ContainerStatus past the caller's deadline = %v, want ErrDeadlineExceeded", err)
	}
}
