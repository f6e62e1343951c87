// Command podstart walks one pod through the CRI calls of pod start against
// podstart's fake runtime, served on a unix socket and reached through
// runtime.Dial, exactly as a real runtime would be. With -cri it talks to a
// real endpoint instead.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

func main() {
	endpoint := flag.String("cri", "", "CRI endpoint (default: the built-in fake runtime on a unix socket)")
	image := flag.String("image", "busybox:1.35", "image to pull and run")
	flag.Parse()
	if err := run(*endpoint, *image); err != nil {
		fmt.Fprintln(os.Stderr, "podstart:", err)
		os.Exit(1)
	}
}

func run(endpoint, image string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if endpoint == "" {
		dir, err := os.MkdirTemp("", "podstart-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		srv := fake.NewServer(fake.New())
		if endpoint, err = srv.ServeUnix(filepath.Join(dir, "cri.sock")); err != nil {
			return err
		}
		defer srv.Stop()
	}
	rt, err := runtime.Dial(ctx, endpoint, runtime.WithConnectTimeout(10*time.Second))
	if err != nil {
		return err
	}
	defer rt.Close()
	v, err := rt.Version(ctx, "v1")
	if err != nil {
		return err
	}
	fmt.Printf("runtime %s %s at %s\n", v.RuntimeName, v.RuntimeVersion, endpoint)

	step := func(name string, f func() error) error {
		start := time.Now()
		err := f()
		fmt.Printf("  %-16s %8s  %v\n", name, time.Since(start).Round(time.Microsecond), errText(err))
		return err
	}
	sandboxCfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "demo", Namespace: "default", Uid: "demo-uid"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
	}
	var ref, sandboxID, containerID string
	if err := step("PullImage", func() (err error) {
		ref, err = rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: image}, nil, sandboxCfg)
		return err
	}); err != nil {
		return err
	}
	if err := step("RunPodSandbox", func() (err error) {
		sandboxID, err = rt.RunPodSandbox(ctx, sandboxCfg, "")
		return err
	}); err != nil {
		return err
	}
	defer func() {
		_ = rt.StopPodSandbox(context.Background(), sandboxID)
		_ = rt.RemovePodSandbox(context.Background(), sandboxID)
	}()
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "main"},
		Image:    &runtimeapi.ImageSpec{Image: ref},
		Command:  []string{"sleep", "3600"},
	}
	if err := step("CreateContainer", func() (err error) {
		containerID, err = rt.CreateContainer(ctx, sandboxID, cfg, sandboxCfg)
		return err
	}); err != nil {
		return err
	}
	if err := step("StartContainer", func() error { return rt.StartContainer(ctx, containerID) }); err != nil {
		return err
	}
	st, err := rt.ContainerStatus(ctx, containerID, false)
	if err != nil {
		return err
	}
	fmt.Printf("container %.12s is %s\n", containerID, st.Status.State)
	return nil
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
