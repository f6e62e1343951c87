package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
)

// The CRI calls image GC, eviction and log rotation make, against
// containerd: the image filesystem with the images' bytes, stats of a
// running container and of its sandbox, and a log reopened for the running
// container and refused for a missing one.
func TestNodeCallsOnContainerd(t *testing.T) {
	e, rt := setup(t)
	a := newAgent(t, rt, t.TempDir())
	pod := newPod(t, rt, "node-calls", sleeper("app", e.openImage))
	a.converge(pod)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	fs, err := rt.ImageFsInfo(ctx)
	if err != nil || len(fs.GetImageFilesystems()) == 0 {
		t.Fatalf("ImageFsInfo: %v, %v", fs, err)
	}
	if u := fs.ImageFilesystems[0]; u.GetFsId().GetMountpoint() == "" || u.GetUsedBytes().GetValue() == 0 {
		t.Errorf("image filesystem %v: want a mount point and the images' bytes", u)
	}

	st := a.status(pod)
	app := st.FindContainerStatusByName("app")
	if app == nil || len(st.SandboxStatuses) == 0 {
		t.Fatalf("status %+v", st)
	}
	sandboxID := st.SandboxStatuses[0].GetId()
	cs, err := rt.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{PodSandboxId: sandboxID})
	if err != nil || len(cs) != 1 || cs[0].GetAttributes().GetId() != app.ID {
		t.Fatalf("ListContainerStats of the sandbox: %v, %v", cs, err)
	}
	if cs[0].GetMemory().GetWorkingSetBytes() == nil || cs[0].GetCpu() == nil {
		t.Errorf("container stats without memory or CPU: %v", cs[0])
	}
	ps, err := rt.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{Id: sandboxID})
	switch {
	case errors.Is(err, runtime.ErrUnimplemented):
		t.Log("ListPodSandboxStats: this containerd does not implement it")
	case err != nil || len(ps) != 1 || ps[0].GetAttributes().GetMetadata().GetUid() != string(pod.UID):
		t.Errorf("ListPodSandboxStats: %v, %v", ps, err)
	}

	if err := rt.ReopenContainerLog(ctx, app.ID); err != nil {
		t.Errorf("ReopenContainerLog of the running container: %v", err)
	}
	if err := rt.ReopenContainerLog(ctx, "no-such-container"); err == nil {
		t.Error("ReopenContainerLog of a missing container succeeded")
	}
}
