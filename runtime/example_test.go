package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// Dial a CRI endpoint and use it; here the endpoint is the fake runtime
// served on a unix socket, so the example runs anywhere.
func ExampleDial() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	srv := fake.NewServer(fake.New(fake.WithImages("busybox:1.35")))
	endpoint, _ := srv.ServeUnix(filepath.Join(dir, "cri.sock"))
	defer srv.Stop()

	ctx := context.Background()
	rt, err := runtime.Dial(ctx, endpoint)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	v, _ := rt.Version(ctx, "v1")
	fmt.Println(v.RuntimeName, v.RuntimeApiVersion)
	st, _ := rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "busybox:1.35"}, false)
	fmt.Println(st.Image.RepoTags[0])
	_, err = rt.ContainerStatus(ctx, "no-such-container", false)
	fmt.Println(errors.Is(err, runtime.ErrNotFound))
	// Output:
	// podstart-fake v1
	// docker.io/library/busybox:1.35
	// true
}
