package podresources

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type pods []*corev1.Pod

func (p pods) ActivePods() []*corev1.Pod { return p }
func (p pods) PodByName(ns, name string) (*corev1.Pod, bool) {
	for _, x := range p {
		if x.Namespace == ns && x.Name == name {
			return x, true
		}
	}
	return nil, false
}

type devs struct{ active []*corev1.Pod }

func (d *devs) UpdateAllocatedDevices(active []*corev1.Pod) { d.active = active }
func (d *devs) GetDevices(uid, c string) []*podresourcesv1.ContainerDevices {
	return []*podresourcesv1.ContainerDevices{{ResourceName: "example.com/dongle", DeviceIds: []string{uid + "/" + c}}}
}
func (d *devs) GetAllocatableDevices() []*podresourcesv1.ContainerDevices {
	return []*podresourcesv1.ContainerDevices{{ResourceName: "example.com/dongle", DeviceIds: []string{"d0"}, Topology: &podresourcesv1.TopologyInfo{Nodes: []*podresourcesv1.NUMANode{{ID: 0}}}}}
}

type dra struct{}

func (dra) GetDynamicResources(p *corev1.Pod, c *corev1.Container) []*podresourcesv1.DynamicResource {
	return []*podresourcesv1.DynamicResource{{ClaimName: "claim-" + c.Name, ClaimNamespace: p.Namespace}}
}

func testPods() pods {
	always := corev1.ContainerRestartPolicyAlways
	return pods{{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: types.UID("u1")},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init"}, {Name: "side", RestartPolicy: &always}},
			Containers:     []corev1.Container{{Name: "app"}},
		},
	}}
}

func container(name string, withDRA bool) *podresourcesv1.ContainerResources {
	c := &podresourcesv1.ContainerResources{Name: name, Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "example.com/dongle", DeviceIds: []string{"u1/" + name}}}}
	if withDRA {
		c.DynamicResources = []*podresourcesv1.DynamicResource{{ClaimName: "claim-" + name, ClaimNamespace: "ns"}}
	}
	return c
}

// Over a real socket: List (sidecars, not plain init containers; devices
// freed for inactive pods first), Get, GetAllocatableResources.
func TestServeListGetAllocatable(t *testing.T) {
	dir, err := os.MkdirTemp("", "pr")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "pod-resources", "kubelet.sock")
	d := &devs{}
	srv, err := New(testPods(), WithDevices(d), WithDynamicResources(dra{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, srv, sock) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := podresourcesv1.NewPodResourcesListerClient(conn)
	list, err := c.List(ctx, &podresourcesv1.ListPodResourcesRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	want := &podresourcesv1.PodResources{Name: "p", Namespace: "ns", Containers: []*podresourcesv1.ContainerResources{container("side", true), container("app", true)}}
	if len(list.PodResources) != 1 || !proto.Equal(list.PodResources[0], want) {
		t.Errorf("List = %v\nwant %v", list.PodResources, want)
	}
	if len(d.active) != 1 {
		t.Errorf("UpdateAllocatedDevices got %d pods", len(d.active))
	}
	got, err := c.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodName: "p", PodNamespace: "ns"})
	if err != nil || !proto.Equal(got.PodResources, want) {
		t.Errorf("Get = %v, %v", got, err)
	}
	_, err = c.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodName: "x", PodNamespace: "ns"})
	if err == nil || err.Error() != "rpc error: code = Unknown desc = pod x in namespace ns not found" {
		t.Errorf("Get unknown: %v", err)
	}
	alloc, err := c.GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil || len(alloc.Devices) != 1 || alloc.Devices[0].Topology.Nodes[0].ID != 0 || len(alloc.CpuIds) != 0 {
		t.Errorf("GetAllocatableResources = %v, %v", alloc, err)
	}
}

func TestWithoutProviders(t *testing.T) {
	srv, err := New(testPods())
	if err != nil {
		t.Fatal(err)
	}
	list, _ := srv.List(context.Background(), nil)
	if c := list.PodResources[0].Containers; len(c) != 2 || c[0].Devices != nil || c[1].DynamicResources != nil {
		t.Errorf("List = %v", list)
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil) accepted")
	}
}

func TestServeRefuses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "kubelet.sock")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	srv, _ := New(pods{})
	if err := Serve(context.Background(), srv, file); err == nil {
		t.Error("Serve replaced a regular file")
	}
	if err := Serve(context.Background(), srv, "relative.sock"); err == nil {
		t.Error("Serve took a relative path")
	}
}
