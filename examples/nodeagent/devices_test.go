package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/podstart/podstart/devicemanager"
)

// devPlugin is a device plugin with two healthy devices that answers
// Allocate with a device node, a mount and an env per device.
type devPlugin struct {
	pluginapi.UnimplementedDevicePluginServer
}

func (devPlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (devPlugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: []*pluginapi.Device{
		{ID: "dev-0", Health: pluginapi.Healthy}, {ID: "dev-1", Health: pluginapi.Healthy}}}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

func (devPlugin) Allocate(_ context.Context, r *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	out := &pluginapi.AllocateResponse{}
	for _, c := range r.ContainerRequests {
		cr := &pluginapi.ContainerAllocateResponse{Envs: map[string]string{}}
		for _, id := range c.DevicesIds {
			cr.Devices = append(cr.Devices, &pluginapi.DeviceSpec{HostPath: "/dev/null", ContainerPath: "/dev/" + id, Permissions: "rw"})
			cr.Envs["EXAMPLE_DEVICE"] = id
		}
		out.ContainerResponses = append(out.ContainerResponses, cr)
	}
	return out, nil
}

// A device plugin registering on the agent's kubelet.sock gives the Node
// its resource; a pod asking for one device is admitted and its container
// created with the device and the plugin's env; a pod asking for more
// than the node has is rejected at admission, never reaching the runtime.
func TestDevicePluginPod(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	dir := devicePluginDir(h.root)
	sock := filepath.Join(dir, "example.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, devPlugin{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	eventually(t, "the device manager's socket", func() bool {
		_, err := os.Stat(filepath.Join(dir, devicemanager.SocketName))
		return err == nil
	})
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, devicemanager.SocketName), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: "example.sock", ResourceName: "example.com/dev"}); err != nil {
		t.Fatalf("register: %v", err)
	}
	want := resource.MustParse("2")
	eventually(t, "the Node's example.com/dev capacity", func() bool {
		n, err := h.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		q, ok := n.Status.Allocatable["example.com/dev"]
		return ok && q.Cmp(want) == 0
	})

	pod := testPod("gpu")
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"example.com/dev": resource.MustParse("1")}
	pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"example.com/dev": resource.MustParse("1")}
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the device pod Running", func() bool {
		p, ok := h.get(t, "gpu")
		return ok && p.Status.Phase == corev1.PodRunning
	})
	var cfg *runtimeapi.ContainerConfig
	for _, c := range h.rt.Calls() {
		if r, ok := c.Request.(*runtimeapi.CreateContainerRequest); ok && r.Config.Metadata.Name == "app" {
			cfg = r.Config
		}
	}
	if cfg == nil {
		t.Fatal("no container created")
	}
	if len(cfg.Devices) != 1 || cfg.Devices[0].HostPath != "/dev/null" {
		t.Errorf("devices %v, want the plugin's one", cfg.Devices)
	}
	env := map[string]string{}
	for _, kv := range cfg.Envs {
		env[kv.Key] = string(kv.Value)
	}
	if id := env["EXAMPLE_DEVICE"]; id != "dev-0" && id != "dev-1" {
		t.Errorf("EXAMPLE_DEVICE=%q, want a device ID", id)
	}

	greedy := testPod("greedy")
	greedy.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"example.com/dev": resource.MustParse("3")}
	greedy.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"example.com/dev": resource.MustParse("3")}
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, greedy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the greedy pod rejected", func() bool {
		p, ok := h.get(t, "greedy")
		return ok && p.Status.Phase == corev1.PodFailed
	})
	p, _ := h.get(t, "greedy")
	if p.Status.Reason == "" || p.Status.Message == "" {
		t.Errorf("rejection without kubelet's reason and message: %+v", p.Status)
	}
	for _, c := range h.rt.Calls() {
		if r, ok := c.Request.(*runtimeapi.RunPodSandboxRequest); ok && r.Config.Metadata.Name == "greedy" {
			t.Fatal("a rejected pod reached the runtime")
		}
	}
}
