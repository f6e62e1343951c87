package fake_test

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// A CreateContainer whose answer is lost: the container exists, the caller
// heard Unavailable and finds it by listing.
func ExampleRuntime_LoseAnswer() {
	ctx := context.Background()
	rt := fake.New(fake.WithImages("busybox:1.35"))
	rt.LoseAnswer("CreateContainer", 1)

	sb, _ := rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Uid: "1"}}, "")
	cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox:1.35"}}
	id, err := rt.CreateContainer(ctx, sb, cfg, nil)
	fmt.Printf("id %q, unavailable: %v\n", id, errors.Is(err, runtime.ErrUnavailable))
	list, _ := rt.ListContainers(ctx, nil)
	fmt.Println(len(list), list[0].Metadata.Name, list[0].State)
	// Output:
	// id "", unavailable: true
	// 1 app CONTAINER_CREATED
}

// A node after an agent restart: a sandbox and an init container that
// finished before the restart, with no call recorded.
func ExampleRuntime_SeedContainer() {
	ctx := context.Background()
	rt := fake.New()
	at := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	sb := rt.SeedSandbox(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Uid: "1"}},
		runtimeapi.PodSandboxState_SANDBOX_READY, at)
	id, _ := rt.SeedContainer(sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "init"}, Image: &runtimeapi.ImageSpec{Image: "busybox:1.35"}},
		fake.Seeded{State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: at, FinishedAt: at.Add(time.Second)})
	st, _ := rt.ContainerStatus(ctx, id, false)
	fmt.Println(st.Status.State, st.Status.Reason, st.Status.Image.Image, time.Unix(0, st.Status.FinishedAt).UTC().Format(time.TimeOnly))
	fmt.Println(rt.CallCount("CreateContainer"))
	// Output:
	// CONTAINER_EXITED Completed docker.io/library/busybox:1.35 09:00:01
	// 0
}
