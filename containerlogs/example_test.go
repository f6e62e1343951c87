package containerlogs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/containerlogs"
	"github.com/podstart/podstart/runtime/fake"
)

// A running container whose log reached the maximum size is rotated on
// the next pass: its live log gets a timestamp and the runtime reopens a
// new one. (A node calls Run, which makes a pass every 10 s.)
func ExampleManager_RotateOnce() {
	logs, _ := os.MkdirTemp("", "pods")
	defer os.RemoveAll(logs)

	rt := fake.New()
	sandbox := rt.SeedSandbox(&runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "1234"},
		LogDirectory: filepath.Join(logs, "default_web_1234"),
	}, runtimeapi.PodSandboxState_SANDBOX_READY, time.Time{})
	_, _ = rt.SeedContainer(sandbox, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: "nginx"},
		LogPath:  "app/0.log",
	}, fake.Seeded{State: runtimeapi.ContainerState_CONTAINER_RUNNING})
	_ = os.MkdirAll(filepath.Join(logs, "default_web_1234", "app"), 0o755)
	_ = os.WriteFile(filepath.Join(logs, "default_web_1234", "app", "0.log"), make([]byte, 2048), 0o640)

	clock := testingclock.NewFakeClock(time.Date(2026, 11, 26, 17, 0, 0, 0, time.Local))
	m, err := containerlogs.New(rt,
		containerlogs.WithPodLogsDir(logs),
		containerlogs.WithMaxSize(1024),
		containerlogs.WithClock(clock))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := m.RotateOnce(context.Background()); err != nil {
		fmt.Println(err)
	}
	entries, _ := os.ReadDir(filepath.Join(logs, "default_web_1234", "app"))
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	fmt.Println("reopens:", rt.CallCount("ReopenContainerLog"))
	// Output:
	// 0.log.20261126-170000
	// reopens: 1
}
