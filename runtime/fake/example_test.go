package fake_test

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// A fake runtime with a seeded image, an init-style container that exits at
// once, a scripted failure, and the record of calls.
func ExampleNew() {
	ctx := context.Background()
	rt := fake.New(
		fake.WithImages("busybox:1.35"),
		fake.WithStartFunc(func(c *runtimeapi.ContainerConfig) *fake.Exit {
			return &fake.Exit{Code: 0} // every container finishes at once
		}),
	)
	rt.FailNext("CreateContainer", 1, status.Error(codes.Unavailable, "runtime restarting"))

	sb, _ := rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Uid: "1"}}, "")
	cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "init"}, Image: &runtimeapi.ImageSpec{Image: "busybox:1.35"}}
	_, err := rt.CreateContainer(ctx, sb, cfg, nil)
	fmt.Println("first create unavailable:", errors.Is(err, runtime.ErrUnavailable))
	id, _ := rt.CreateContainer(ctx, sb, cfg, nil)
	_ = rt.StartContainer(ctx, id)
	st, _ := rt.ContainerStatus(ctx, id, false)
	fmt.Println(st.Status.State, st.Status.ExitCode, st.Status.Reason)
	for _, c := range rt.Calls() {
		fmt.Print(c.Method, " ")
	}
	fmt.Println()
	// Output:
	// first create unavailable: true
	// CONTAINER_EXITED 0 Completed
	// RunPodSandbox CreateContainer CreateContainer StartContainer ContainerStatus
}
