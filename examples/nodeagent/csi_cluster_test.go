package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/csi"
	csifake "github.com/podstart/podstart/csi/fake"
	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/pluginmanager"
	"github.com/podstart/podstart/runtime/fake"
	"github.com/podstart/podstart/volumemanager"
)

// registrar is node-driver-registrar's part: a pluginregistration.v1
// server announcing a CSI driver's endpoint on a registration socket.
type registrar struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
	mu             sync.Mutex
	statuses       []*registerapi.RegistrationStatus
}

func (r *registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.name, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses = append(r.statuses, s)
	return &registerapi.RegistrationStatusResponse{}, nil
}

func (r *registrar) registered() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.statuses) > 0 && r.statuses[len(r.statuses)-1].PluginRegistered
}

// serveRegistrar serves r on path until the test ends.
func serveRegistrar(t *testing.T, r *registrar, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	registerapi.RegisterRegistrationServer(s, r)
	done := make(chan struct{})
	go func() { _ = s.Serve(ln); close(done) }()
	t.Cleanup(func() { s.Stop(); <-done })
}

// The node runs a pod with a PersistentVolumeClaim against a real
// kube-apiserver v1.37.2 with the node's own credentials (Node authorizer,
// NodeRestriction): a CSI driver (csi/fake, which stages) registers through
// a registration socket in the agent's plugins_registry, the agent writes
// the Node's nodeid annotation and the CSINode; the pod, whose claim is
// bound to a CSI PV of a driver without attach, runs once the driver was
// asked to stage and publish the volume at kubelet's paths; deleted, the
// volume is unpublished and unstaged and nothing is left under the root
// directory. The runtime is runtime/fake.
func TestAgentPVCPodAgainstAPIServer(t *testing.T) {
	t.Parallel() // a cluster of its own
	const (
		node   = "podstart-csi"
		driver = "fake.csi.podstart.io"
		ns     = "default"
	)
	c, admin := startCluster(t, node)
	ctx := context.Background()

	sockDir, err := os.MkdirTemp("", "csi") // socket paths fit in 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	d := csifake.New(driver, csifake.WithCapabilities(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME),
		csifake.WithNodeInfo("fake-node-id", 0, nil))
	endpoint, err := d.Serve(filepath.Join(sockDir, "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)

	root := filepath.Join(sockDir, "root")
	runAgent(t, Config{Client: clientFor(t, c.NodeKubeconfig), Runtime: fake.New(), NodeName: node, RootDir: root,
		PodLogsDir: filepath.Join(root, "logs"), Clock: clock.RealClock{}, Mounter: fakemount.New()})
	reg := &registrar{name: driver, endpoint: endpoint}
	serveRegistrar(t, reg, filepath.Join(root, pluginmanager.DirName, driver+"-reg.sock"))
	eventually(t, "the driver registered", reg.registered)

	// What kubelet's nodeinfomanager writes.
	eventually(t, "the CSINode with the driver", func() bool {
		cn, err := admin.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && len(cn.Spec.Drivers) == 1 && cn.Spec.Drivers[0].NodeID == "fake-node-id"
	})
	n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n.Annotations[csi.NodeIDAnnotation], `{"`+driver+`":"fake-node-id"}`; got != want {
		t.Errorf("node annotation %s = %q, want %q", csi.NodeIDAnnotation, got, want)
	}
	cn, err := admin.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if owners := cn.OwnerReferences; len(owners) != 1 || owners[0].Kind != "Node" || owners[0].UID != n.UID {
		t.Errorf("CSINode owners = %+v, want the Node %s", owners, n.UID)
	}

	pv, claim := createBoundClaim(t, admin, ns, "data", "pv-data", driver, "vol-1")
	grace := int64(5)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "db", Image: "busybox:1.35",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}},
		},
	}
	created, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually60(t, "the PVC pod Running and Ready", func() bool {
		got, err := admin.CoreV1().Pods(ns).Get(ctx, "db", metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning && ready(got.Status)
	})
	staging := volumemanager.StagingPath(root, driver, "vol-1")
	target := volumemanager.TargetPath(root, created.UID, pv.Name)
	stages, publishes := driverPaths(d)
	if !slices.Equal(stages, []string{csifake.NodeStageVolume + " " + staging}) {
		t.Errorf("stage calls %q, want one at %s", stages, staging)
	}
	if !slices.Equal(publishes, []string{csifake.NodePublishVolume + " " + target + " " + staging}) {
		t.Errorf("publish calls %q, want one at %s from %s", publishes, target, staging)
	}

	if err := admin.CoreV1().Pods(ns).Delete(ctx, "db", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	eventually60(t, "pod object deleted by the agent", func() bool {
		_, err := admin.CoreV1().Pods(ns).Get(ctx, "db", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	eventually60(t, "the volume unpublished and unstaged", func() bool {
		stages, publishes := driverPaths(d)
		return slices.Contains(publishes, csifake.NodeUnpublishVolume+" "+target) && slices.Contains(stages, csifake.NodeUnstageVolume+" "+staging)
	})
	eventually60(t, "nothing left of the pod's volume", func() bool {
		_, err := os.Stat(filepath.Join(root, "pods", string(created.UID)))
		return errors.Is(err, os.ErrNotExist)
	})
	var left []string
	err = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Name() == csi.VolDataFileName || e.Name() == "globalmount" || e.Name() == "mount" {
			left = append(left, p)
		}
		return nil
	})
	if err != nil || len(left) != 0 {
		t.Errorf("left under the root: %q (%v)", left, err)
	}
}

// driverPaths returns the driver's stage and unstage calls as "<method>
// <staging path>", and its publish and unpublish calls as "<method>
// <target> [<staging path>]".
func driverPaths(d *csifake.Driver) (stages, publishes []string) {
	for _, c := range d.Calls() {
		switch r := c.Request.(type) {
		case *csipb.NodeStageVolumeRequest:
			stages = append(stages, c.Method+" "+r.StagingTargetPath)
		case *csipb.NodeUnstageVolumeRequest:
			stages = append(stages, c.Method+" "+r.StagingTargetPath)
		case *csipb.NodePublishVolumeRequest:
			publishes = append(publishes, c.Method+" "+r.TargetPath+" "+r.StagingTargetPath)
		case *csipb.NodeUnpublishVolumeRequest:
			publishes = append(publishes, c.Method+" "+r.TargetPath)
		}
	}
	return stages, publishes
}

// createBoundClaim makes what a provisioner and the PV controller would
// have: a CSIDriver without attach, a claim and its CSI PV bound to each
// other.
func createBoundClaim(t *testing.T, admin kubernetes.Interface, ns, claimName, pvName, driver, handle string) (*corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
	t.Helper()
	ctx := context.Background()
	attach := false
	if _, err := admin.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: driver}, Spec: storagev1.CSIDriverSpec{AttachRequired: &attach},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	size := resource.MustParse("1Gi")
	claim, err := admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claimName, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			VolumeName:  pvName,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := admin.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			ClaimRef:    &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: claimName, UID: claim.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: driver, VolumeHandle: handle, FSType: "ext4"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim.Status.Phase = corev1.ClaimBound
	claim.Status.AccessModes = claim.Spec.AccessModes
	claim.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: size}
	if claim, err = admin.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv.Status.Phase = corev1.VolumeBound
	if pv, err = admin.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pv, claim
}
