package diff

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kvolutil "k8s.io/kubernetes/pkg/volume/util"

	"github.com/podstart/podstart/csi"
	csifake "github.com/podstart/podstart/csi/fake"
	mountsfake "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/volumemanager"
)

// patchRecorder is volumemanager's API over Objects, recording the claim
// status patches.
type patchRecorder struct {
	*volumemanager.Objects
	mu      sync.Mutex
	patches []string
}

func (p *patchRecorder) PatchPersistentVolumeClaimStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.PersistentVolumeClaim, error) {
	p.mu.Lock()
	p.patches = append(p.patches, string(patch))
	p.mu.Unlock()
	return p.Objects.PatchPersistentVolumeClaimStatus(ctx, namespace, name, patch)
}

// comparable drops what differs by design between two runs: the
// resourceVersion precondition (each side's own counter) and condition
// times (each side's clock); it reports whether a resourceVersion was there.
func comparable(t *testing.T, patch string) (string, bool) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(patch), &m); err != nil {
		t.Fatal(err)
	}
	hadRV := false
	if md, ok := m["metadata"].(map[string]any); ok {
		_, hadRV = md["resourceVersion"]
		delete(md, "resourceVersion")
		if len(md) == 0 {
			delete(m, "metadata")
		}
	}
	if st, ok := m["status"].(map[string]any); ok {
		if conds, ok := st["conditions"].([]any); ok {
			for _, c := range conds {
				if cm, ok := c.(map[string]any); ok {
					if _, ok := cm["lastTransitionTime"]; ok {
						cm["lastTransitionTime"] = "<time>"
					}
				}
			}
		}
	}
	b, _ := json.Marshal(m)
	return string(b), hadRV
}

// TestExpansionPatchesAgainstKubelet: the claim status patches
// volumemanager sends when it expands a mounted volume on the node equal
// those kubelet v1.37.2's resize_util functions make (through client-go's
// fake clientset) for the same claim, sizes and error, in kubelet's order
// (NodeExpander.expandOnPlugin and legacyCallNodeExpandOnPlugin), with the
// resourceVersion precondition where kubelet sets one.
func TestExpansionPatchesAgainstKubelet(t *testing.T) {
	const (
		driverName = "fake.csi.k8s.io"
		nodeName   = "fakeNode"
	)
	gi := func(s string) resource.Quantity { return resource.MustParse(s) }
	for _, tc := range []struct {
		name     string
		recovery bool
		fail     error // NodeExpandVolume's answer
		// kubelet's calls on the claim as it is when the node expands it.
		kubelet func(pvc *corev1.PersistentVolumeClaim, c *fake.Clientset) error
	}{
		{name: "resizer with recovery", recovery: true, kubelet: func(pvc *corev1.PersistentVolumeClaim, c *fake.Clientset) error {
			pvc, err := kvolutil.MarkNodeExpansionInProgress(pvc, c)
			if err != nil {
				return err
			}
			_, err = kvolutil.MarkNodeExpansionFinishedWithRecovery(pvc, gi("2Gi"), c)
			return err
		}},
		{name: "older resizer", kubelet: func(pvc *corev1.PersistentVolumeClaim, c *fake.Clientset) error {
			_, err := kvolutil.MarkFSResizeFinished(pvc, gi("2Gi"), c)
			return err
		}},
		{name: "infeasible", recovery: true, fail: status.Error(codes.OutOfRange, "too big"), kubelet: func(pvc *corev1.PersistentVolumeClaim, c *fake.Clientset) error {
			pvc, err := kvolutil.MarkNodeExpansionInProgress(pvc, c)
			if err != nil {
				return err
			}
			_, err = kvolutil.MarkNodeExpansionInfeasible(pvc, c, errors.New("Expander.NodeExpand failed to expand the volume rpc error: code = OutOfRange desc = too big"))
			return err
		}},
		{name: "failed", recovery: true, fail: status.Error(codes.Internal, "boom"), kubelet: func(pvc *corev1.PersistentVolumeClaim, c *fake.Clientset) error {
			pvc, err := kvolutil.MarkNodeExpansionInProgress(pvc, c)
			if err != nil {
				return err
			}
			_, err = kvolutil.MarkNodeExpansionFailedCondition(pvc, c, errors.New("Expander.NodeExpand failed to expand the volume : rpc error: code = Internal desc = boom"))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "data", UID: "claim-uid", ResourceVersion: "10"},
				Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pvc-42", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: gi("1Gi")}}},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: gi("1Gi")},
					Conditions: []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}},
			}
			pv := &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: "pvc-42"},
				Spec: corev1.PersistentVolumeSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Capacity:    corev1.ResourceList{corev1.ResourceStorage: gi("1Gi")},
					ClaimRef:    &corev1.ObjectReference{Namespace: "apps", Name: "data", UID: "claim-uid"},
					PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
						Driver: driverName, VolumeHandle: "vol-42", FSType: "ext4"}},
				},
			}
			drv := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driverName}, Spec: storagev1.CSIDriverSpec{
				AttachRequired: ptr(false), PodInfoOnMount: ptr(false), FSGroupPolicy: ptr(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy),
				VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}}}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "db-0", UID: "0f1e2d3c-aaaa-bbbb-cccc-123456789abc"},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
						TerminationMessagePolicy: corev1.TerminationMessageReadFile, TerminationMessagePath: "/dev/termination-log",
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
					RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
				}}

			// podstart: the volume mounted at 1Gi, then grown.
			d := csifake.New(driverName, csifake.WithCapabilities(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
				csipb.NodeServiceCapability_RPC_EXPAND_VOLUME), csifake.WithNodeInfo(nodeName, 0, nil))
			dir, err := os.MkdirTemp("", "expdiff")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			sock, err := d.Serve(filepath.Join(dir, "csi.sock"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(d.Stop)
			root := t.TempDir()
			plugin, err := csi.New(root, nodeName)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := plugin.RegisterPlugin(ctx, driverName, sock, []string{"1.0.0"}, 0); err != nil {
				t.Fatal(err)
			}
			api := &patchRecorder{Objects: &volumemanager.Objects{}}
			api.Set(claim, pv, drv)
			m, err := volumemanager.New(nodeName, root, api, volumemanager.CSI(plugin), volumemanager.WithMounter(mountsfake.New()))
			if err != nil {
				t.Fatal(err)
			}
			if err := m.AddPod(ctx, pod); err != nil {
				t.Fatal(err)
			}
			if err := m.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			grown := claim.DeepCopy()
			grown.Spec.Resources.Requests[corev1.ResourceStorage] = gi("2Gi")
			if tc.recovery {
				grown.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: gi("2Gi")}
				grown.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizePending}
			}
			grownPV := pv.DeepCopy()
			grownPV.Spec.Capacity[corev1.ResourceStorage] = gi("2Gi")
			api.Set(grown, grownPV)
			if tc.fail != nil {
				d.FailNext(csifake.NodeExpandVolume, tc.fail)
			}
			if err := m.AddPod(ctx, pod); err != nil {
				t.Fatal(err)
			}
			_ = m.Reconcile(ctx) // fails with tc.fail

			// kubelet's resize_util on the same claim.
			client := fake.NewClientset(grown.DeepCopy())
			var kpatches []string
			client.PrependReactor("patch", "persistentvolumeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
				kpatches = append(kpatches, string(a.(k8stesting.PatchAction).GetPatch()))
				return false, nil, nil
			})
			if err := tc.kubelet(grown.DeepCopy(), client); err != nil {
				t.Fatal(err)
			}

			if len(kpatches) == 0 || len(api.patches) != len(kpatches) {
				t.Fatalf("podstart's patches %q\nkubelet's %q", api.patches, kpatches)
			}
			for i := range kpatches {
				p, prv := comparable(t, api.patches[i])
				k, krv := comparable(t, kpatches[i])
				if d := cmp.Diff(k, p); d != "" || prv != krv {
					t.Errorf("patch %d (-kubelet +podstart):\n%s\nresourceVersion: kubelet %v, podstart %v\nkubelet's: %s\npodstart's: %s", i, d, krv, prv, kpatches[i], api.patches[i])
				}
				t.Logf("patch %d: %s", i, api.patches[i])
			}
		})
	}
}
