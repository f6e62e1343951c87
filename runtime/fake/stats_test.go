package fake_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// node is what image GC, eviction and log rotation ask of a runtime.
type node interface {
	runtime.Runtime
	runtime.StatsLister
	runtime.ContainerLogReopener
	runtime.ImageFsInfoReader
}

// ImageFsInfo, ListContainerStats, ListPodSandboxStats and
// ReopenContainerLog answer alike in process and over the wire.
func TestNodeStatsCalls(t *testing.T) {
	for _, wire := range []bool{false, true} {
		f := fake.New(fake.WithImageSize(3<<20), fake.WithImages("busybox:1.35", "nginx:1.27"), fake.WithImageFsMountpoint("/images"))
		var rt node = f
		if wire {
			srv := fake.NewServer(f)
			ep, err := srv.ServeUnix(filepath.Join(t.TempDir(), "cri.sock"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := runtime.Dial(context.Background(), ep)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			defer c.Close()
			rt = c
		}
		ctx := context.Background()
		fs, err := rt.ImageFsInfo(ctx)
		if err != nil || len(fs.GetImageFilesystems()) != 1 {
			t.Fatalf("wire %v: ImageFsInfo %v, %v", wire, fs, err)
		}
		if u := fs.ImageFilesystems[0]; u.GetFsId().GetMountpoint() != "/images" || u.GetUsedBytes().GetValue() != 6<<20 || u.GetInodesUsed().GetValue() != 2 {
			t.Errorf("wire %v: image fs %v, want /images with 6 MiB in 2 inodes", wire, u)
		}

		sb := sandbox(t, f, "p", false)
		other := sandbox(t, f, "q", false)
		app, err := rt.CreateContainer(ctx, sb, containerCfg("app"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.ReopenContainerLog(ctx, app); err == nil {
			t.Errorf("wire %v: a created container's log reopened", wire)
		}
		if err := rt.StartContainer(ctx, app); err != nil {
			t.Fatal(err)
		}
		side, err := rt.CreateContainer(ctx, sb, containerCfg("side"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.CreateContainer(ctx, other, containerCfg("else"), nil); err != nil {
			t.Fatal(err)
		}
		if err := f.SetMemoryUsage(app, 5<<20); err != nil {
			t.Fatal(err)
		}
		if err := f.SetMemoryUsage(side, 1<<20); err != nil {
			t.Fatal(err)
		}
		if err := rt.ReopenContainerLog(ctx, app); err != nil {
			t.Errorf("wire %v: reopen the running container's log: %v", wire, err)
		}
		if err := rt.ReopenContainerLog(ctx, "nope"); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("wire %v: reopen a missing container: %v, want ErrNotFound", wire, err)
		}

		all, err := rt.ListContainerStats(ctx, nil)
		if err != nil || len(all) != 3 {
			t.Fatalf("wire %v: %d container stats, %v; want 3", wire, len(all), err)
		}
		mine, err := rt.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{PodSandboxId: sb})
		if err != nil || len(mine) != 2 || mine[0].GetAttributes().GetId() != app || mine[0].GetMemory().GetWorkingSetBytes().GetValue() != 5<<20 {
			t.Fatalf("wire %v: the sandbox's container stats %v, %v", wire, mine, err)
		}
		pods, err := rt.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{Id: sb})
		if err != nil || len(pods) != 1 {
			t.Fatalf("wire %v: sandbox stats %v, %v", wire, pods, err)
		}
		if p := pods[0]; p.GetAttributes().GetMetadata().GetName() != "p" || len(p.GetLinux().GetContainers()) != 2 || p.GetLinux().GetMemory().GetWorkingSetBytes().GetValue() != 6<<20 {
			t.Errorf("wire %v: sandbox stats %v, want p's two containers and 6 MiB", wire, p)
		}
		if every, err := rt.ListPodSandboxStats(ctx, nil); err != nil || len(every) != 2 {
			t.Errorf("wire %v: %d sandbox stats, %v; want 2", wire, len(every), err)
		}
	}
}

// A runtime wrapped by Answering without these calls answers
// ErrUnimplemented, as a CRI runtime that lacks them.
func TestNodeStatsCallsUnimplemented(t *testing.T) {
	type plain struct{ runtime.Runtime } // the fake with only runtime.Runtime's methods
	pass := func(_ context.Context, _ string, _, resp proto.Message, err error) (proto.Message, error) {
		return resp, err
	}
	a := fake.Answering(plain{fake.New()}, pass).(node)
	ctx := context.Background()
	if _, err := a.ImageFsInfo(ctx); !errors.Is(err, runtime.ErrUnimplemented) {
		t.Errorf("ImageFsInfo: %v", err)
	}
	if err := a.ReopenContainerLog(ctx, "x"); !errors.Is(err, runtime.ErrUnimplemented) {
		t.Errorf("ReopenContainerLog: %v", err)
	}
	if _, err := a.ListContainerStats(ctx, nil); !errors.Is(err, runtime.ErrUnimplemented) {
		t.Errorf("ListContainerStats: %v", err)
	}
	if _, err := a.ListPodSandboxStats(ctx, nil); !errors.Is(err, runtime.ErrUnimplemented) {
		t.Errorf("ListPodSandboxStats: %v", err)
	}
}
