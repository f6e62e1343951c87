package imagegc_test

import (
	"context"
	"fmt"

	"github.com/podstart/podstart/imagegc"
	"github.com/podstart/podstart/runtime/fake"
)

// fixedFS reports the image filesystem 90% full.
type fixedFS struct{}

func (fixedFS) Usage(context.Context, string) (uint64, uint64, error) { return 1000, 100, nil }

func Example() {
	ctx := context.Background()
	rt := fake.New(fake.WithImageSize(60), fake.WithImages("busybox", "alpine", "nginx"))
	m, err := imagegc.New(rt,
		imagegc.WithFilesystem(fixedFS{}), // default: statfs of ImageFsInfo's mount point
		imagegc.WithPolicy(imagegc.Policy{HighThresholdPercent: 85, LowThresholdPercent: 80}),
		imagegc.WithOnPass(func(p imagegc.Pass) {
			fmt.Printf("%s: usage %d%%, removed %d images\n", p.Kind, p.UsagePercent, len(p.Removed))
		}))
	if err != nil {
		panic(err)
	}
	// 90% used, 85% is the high threshold: free 1000×20% − 100 = 100 bytes.
	if err := m.GarbageCollect(ctx); err != nil {
		panic(err)
	}
	left, _ := rt.ListImages(ctx, nil)
	fmt.Println(len(left), "images left")
	// Output:
	// GarbageCollect: usage 90%, removed 2 images
	// 1 images left
}
