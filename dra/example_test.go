package dra_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/dra"
	"github.com/podstart/podstart/pluginmanager"
)

// gpuDriver stands for a DRA driver built on kubeletplugin: its
// registration socket and its dra.v1 service.
type gpuDriver struct {
	drapb.UnimplementedDRAPluginServer
	registerapi.UnimplementedRegistrationServer
	endpoint   string
	registered chan bool
}

func (d *gpuDriver) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: "gpu.example.com", Endpoint: d.endpoint, SupportedVersions: []string{drapb.DRAPluginService}}, nil
}

func (d *gpuDriver) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	d.registered <- s.PluginRegistered
	return &registerapi.RegistrationStatusResponse{}, nil
}

func (d *gpuDriver) NodePrepareResources(_ context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	resp := &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{}}
	for _, c := range req.Claims {
		fmt.Println("driver: prepare", c.Namespace+"/"+c.Name)
		resp.Claims[c.Uid] = &drapb.NodePrepareResourceResponse{Devices: []*drapb.Device{
			{RequestNames: []string{"gpu"}, PoolName: "node-1", DeviceName: "gpu-0", CdiDeviceIds: []string{"gpu.example.com/gpu=gpu-0"}},
		}}
	}
	return resp, nil
}

func (d *gpuDriver) NodeUnprepareResources(_ context.Context, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	resp := &drapb.NodeUnprepareResourcesResponse{Claims: map[string]*drapb.NodeUnprepareResourceResponse{}}
	for _, c := range req.Claims {
		fmt.Println("driver: unprepare", c.Namespace+"/"+c.Name)
		resp.Claims[c.Uid] = &drapb.NodeUnprepareResourceResponse{}
	}
	return resp, nil
}

func serve(path string, register func(*grpc.Server)) *grpc.Server {
	lis, err := net.Listen("unix", path)
	if err != nil {
		panic(err)
	}
	s := grpc.NewServer()
	register(s)
	go func() { _ = s.Serve(lis) }()
	return s
}

func Example() {
	root, err := os.MkdirTemp("", "kubelet")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)

	// The pod and its claim, as the scheduler left them: allocated and
	// reserved for the pod. An informer's lister would serve the claim.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "train", UID: "pod-uid"},
		Spec: corev1.PodSpec{
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("train-gpu")}},
			Containers: []corev1.Container{{Name: "main", Image: "trainer",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
		},
	}
	claim := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "train-gpu", UID: "claim-uid"},
		Status: resourcev1.ResourceClaimStatus{
			Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
				{Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}}},
			ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "train", UID: "pod-uid"}},
		},
	}
	getter := dra.ClaimGetterFunc(func(_ context.Context, ns, name string) (*resourcev1.ResourceClaim, error) {
		return claim, nil
	})

	// The DRA manager, the handler of DRA plugins for the plugin manager.
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := dra.New(ctx, root, getter)
	if err != nil {
		panic(err)
	}
	defer mgr.Close()
	regDir := filepath.Join(root, pluginmanager.DirName)
	pm, err := pluginmanager.New(regDir)
	if err != nil {
		panic(err)
	}
	pm.AddHandler(registerapi.DRAPlugin, mgr)
	done := make(chan error)
	go func() { done <- pm.Run(ctx) }()

	// The driver starts and registers.
	drv := &gpuDriver{endpoint: filepath.Join(root, "gpu.sock"), registered: make(chan bool, 1)}
	draSrv := serve(drv.endpoint, func(s *grpc.Server) { drapb.RegisterDRAPluginServer(s, drv) })
	defer draSrv.Stop()
	if err := os.MkdirAll(regDir, pluginmanager.DirMode); err != nil {
		panic(err)
	}
	regSrv := serve(filepath.Join(regDir, "gpu.example.com-reg.sock"), func(s *grpc.Server) { registerapi.RegisterRegistrationServer(s, drv) })
	defer regSrv.Stop()
	fmt.Println("registered:", <-drv.registered)

	// Before the sandbox (podsync.WithResourcePreparer(mgr)).
	if err := mgr.PrepareResources(ctx, pod); err != nil {
		panic(err)
	}
	// For each container (podsync.WithDevices(mgr)).
	opts, err := mgr.DeviceOptions(ctx, pod, &pod.Spec.Containers[0])
	if err != nil {
		panic(err)
	}
	fmt.Println("CDI devices:", opts.CDIDevices)
	// Once the pod's containers are gone (podworker.WithResourceClaims(mgr)).
	if err := mgr.UnprepareResources(ctx, pod); err != nil {
		panic(err)
	}
	cancel()
	<-done
	// Output:
	// registered: true
	// driver: prepare ml/train-gpu
	// CDI devices: [gpu.example.com/gpu=gpu-0]
	// driver: unprepare ml/train-gpu
}
