package fake

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
)

var _ runtime.ProgressPuller = (*Runtime)(nil)

// WithPullProgress makes PullImageWithProgress report progress in steps
// reports, one every interval on the runtime's clock, before the pull
// completes. The default is one report at the end.
func WithPullProgress(steps int, interval time.Duration) Option {
	return func(r *Runtime) { r.progressSteps, r.progressInterval = steps, interval }
}

// PullImageWithProgress implements runtime.ProgressPuller: it reports
// progress (see WithPullProgress), then pulls as PullImage does. It is
// recorded as a PullImage call and goes through PullImage's interceptors
// and answer interceptors.
func (r *Runtime) PullImageWithProgress(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig, progress func(runtime.PullProgress)) (string, error) {
	return r.answering().PullImageWithProgress(ctx, image, auth, sandboxConfig, progress)
}

func (b *bare) PullImageWithProgress(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig, progress func(runtime.PullProgress)) (string, error) {
	r := (*Runtime)(b)
	total := int64(r.imageSize)
	steps := max(r.progressSteps, 1)
	report := func(i int) {
		if progress != nil {
			progress(runtime.PullProgress{BytesDone: total * int64(i) / int64(steps), BytesTotal: total})
		}
	}
	return r.pull(ctx, image, auth, sandboxConfig, func(ctx context.Context) error {
		for i := 1; i < steps; i++ {
			report(i)
			t := r.clock.NewTimer(r.progressInterval)
			select {
			case <-t.C():
			case <-ctx.Done():
				t.Stop()
				return runtime.Classify(ctx.Err())
			}
		}
		report(steps)
		return nil
	})
}
