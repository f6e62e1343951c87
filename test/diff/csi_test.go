package diff

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/volume"
	kcsi "k8s.io/kubernetes/pkg/volume/csi"
	volumetest "k8s.io/kubernetes/pkg/volume/testing"

	"github.com/podstart/podstart/csi"
	csifake "github.com/podstart/podstart/csi/fake"
)

// TestCSIPluginAgainstKubelet runs kubelet v1.37.2's CSI volume plugin
// (pkg/volume/csi over volume/testing's fake kubelet host and client-go's
// fake clientset) and podstart's csi.Plugin against two identical fake
// drivers (csi/fake), through registration, stage, publish, unpublish and
// unstage of a PersistentVolume with secrets, podInfoOnMount, a
// VolumeAttachment's metadata and fsGroup, and compares: the CSI calls in
// order with their requests (root directories normalised), vol_data.json
// byte for byte, the files left after each step, and the Node and CSINode
// kubelet writes with those podstart's pure functions return.
func TestCSIPluginAgainstKubelet(t *testing.T) {
	const (
		driverName = "fake.csi.k8s.io"
		nodeName   = "fakeNode"
	)
	caps := []csipb.NodeServiceCapability_RPC_Type{
		csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP,
		csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
	}
	topology := map[string]string{"topology.fake.csi/zone": "z1"}
	newDriver := func() (*csifake.Driver, string) {
		d := csifake.New(driverName, csifake.WithCapabilities(caps...), csifake.WithNodeInfo("i-0abc", 16, topology))
		dir, err := os.MkdirTemp("", "csidiff")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		sock, err := d.Serve(filepath.Join(dir, "csi.sock"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Stop)
		return d, sock
	}
	kDriver, kSock := newDriver()
	pDriver, pSock := newDriver()

	fsGroup := int64(4000)
	policy := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid-1", Labels: map[string]string{"kubernetes.io/hostname": nodeName}}}
	csiDriver := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: driverName},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired:       ptr(true),
			PodInfoOnMount:       ptr(true),
			FSGroupPolicy:        &policy,
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral},
		},
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-42"},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes:  []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
			MountOptions: []string{"noatime", "discard"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: driverName, VolumeHandle: "projects/p/disks/d-42", FSType: "xfs",
				VolumeAttributes:     map[string]string{"tier": "gold"},
				NodeStageSecretRef:   &corev1.SecretReference{Name: "stage", Namespace: "storage"},
				NodePublishSecretRef: &corev1.SecretReference{Name: "publish", Namespace: "storage"},
			}},
		},
	}
	attachment := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: csi.AttachmentName("projects/p/disks/d-42", driverName, nodeName)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: driverName, NodeName: nodeName,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr("pvc-42")}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"devicePath": "/dev/sdz"}},
	}
	stageSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "stage", Namespace: "storage"}, Data: map[string][]byte{"key": []byte("stage-secret")}}
	publishSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "publish", Namespace: "storage"}, Data: map[string][]byte{"user": []byte("u"), "pass": []byte("publish-secret")}}
	blockPV := pv.DeepCopy()
	blockPV.Name = "pvc-block"
	blockPV.Spec.VolumeMode = ptr(corev1.PersistentVolumeBlock)
	blockPV.Spec.CSI.VolumeHandle = "blk-7"
	blockPV.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	blockAttachment := attachment.DeepCopy()
	blockAttachment.Name = csi.AttachmentName("blk-7", driverName, nodeName)
	blockAttachment.Spec.Source.PersistentVolumeName = ptr("pvc-block")
	inlineSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "inline", Namespace: "apps"}, Data: map[string][]byte{"k": []byte("inline-secret")}}
	inline := &corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: driverName, FSType: ptr("ext4"), ReadOnly: ptr(true),
		VolumeAttributes:     map[string]string{"size": "1Gi"},
		NodePublishSecretRef: &corev1.LocalObjectReference{Name: "inline"},
	}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "apps", UID: "0f1e2d3c-aaaa-bbbb-cccc-123456789abc"},
		Spec:       corev1.PodSpec{ServiceAccountName: "db"},
	}

	// kubelet's plugin.
	client := fake.NewClientset(node.DeepCopy(), csiDriver, attachment, blockAttachment, stageSecret, publishSecret, inlineSecret)
	factory := informers.NewSharedInformerFactory(client, 0)
	driverLister := factory.Storage().V1().CSIDrivers().Lister()
	vaLister := factory.Storage().V1().VolumeAttachments().Lister()
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }() // the informers stop, then Shutdown waits for them
	factory.WaitForCacheSync(ctx.Done())
	kRoot := t.TempDir()
	host := volumetest.NewFakeKubeletVolumeHostWithCSINodeName(t, kRoot, client, kcsi.ProbeVolumePlugins(), nodeName, driverLister, vaLister)
	if err := kcsi.PluginHandler.RegisterPlugin(ctx, driverName, kSock, []string{"1.0.0"}, nil); err != nil {
		t.Fatal(err)
	}
	defer kcsi.PluginHandler.DeRegisterPlugin(ctx, driverName, kSock)
	plug, err := host.GetPluginMgr().FindPluginByName(kcsi.CSIPluginName)
	if err != nil {
		t.Fatal(err)
	}

	// podstart's.
	pRoot := t.TempDir()
	p, err := csi.New(pRoot, nodeName)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.RegisterPlugin(ctx, driverName, pSock, []string{"1.0.0"}, 0); err != nil {
		t.Fatal(err)
	}

	// Registration: the Node and the CSINode.
	info, _ := p.DriverInfo(driverName)
	wantNode, _, err := csi.InstallDriverOnNode(node, info)
	if err != nil {
		t.Fatal(err)
	}
	gotNode, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantNode.ObjectMeta.Labels, gotNode.Labels); diff != "" {
		t.Errorf("Node labels (-podstart +kubelet):\n%s", diff)
	}
	if diff := cmp.Diff(wantNode.Annotations, gotNode.Annotations); diff != "" {
		t.Errorf("Node annotations (-podstart +kubelet):\n%s", diff)
	}
	wantCSINode, _, err := csi.InstallDriverOnCSINode(csi.NewCSINode(nodeName, node.UID), info)
	if err != nil {
		t.Fatal(err)
	}
	gotCSINode, err := client.StorageV1().CSINodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantCSINode.ObjectMeta, gotCSINode.ObjectMeta, cmpIgnoreServerMeta); diff != "" {
		t.Errorf("CSINode metadata (-podstart +kubelet):\n%s", diff)
	}
	if diff := cmp.Diff(wantCSINode.Spec, gotCSINode.Spec); diff != "" {
		t.Errorf("CSINode spec (-podstart +kubelet):\n%s", diff)
	}
	compareCalls(t, "registration", kDriver, kRoot, pDriver, pRoot)

	// Stage.
	spec := volume.NewSpecFromPersistentVolume(pv.DeepCopy(), false)
	dm, err := plug.(volume.DeviceMountableVolumePlugin).NewDeviceMounter()
	if err != nil {
		t.Fatal(err)
	}
	kStaging, err := dm.GetDeviceMountPath(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := dm.MountDevice(spec, "", kStaging, volume.DeviceMounterArgs{FsGroup: &fsGroup}); err != nil {
		t.Fatal(err)
	}
	vol, err := csi.VolumeFromPV(pv, false)
	if err != nil {
		t.Fatal(err)
	}
	staged, err := p.Stage(ctx, csi.StageRequest{
		Volume:         vol,
		PublishContext: attachment.Status.AttachmentMetadata,
		Secrets:        csi.SecretsFromData(stageSecret.Data),
		FSGroup:        &fsGroup,
		CSIDriver:      csiDriver,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rel(kRoot, kStaging) != rel(pRoot, staged.StagingPath) {
		t.Errorf("staging path: kubelet %s, podstart %s", rel(kRoot, kStaging), rel(pRoot, staged.StagingPath))
	}
	compareCalls(t, "stage", kDriver, kRoot, pDriver, pRoot)
	compareTrees(t, "stage", kRoot, pRoot)

	// Publish.
	mounter, err := plug.NewMounter(spec, pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := mounter.SetUp(volume.MounterArgs{FsGroup: &fsGroup}); err != nil {
		t.Fatal(err)
	}
	published, err := p.Publish(ctx, csi.PublishRequest{
		Volume:         vol,
		Pod:            pod,
		PublishContext: attachment.Status.AttachmentMetadata,
		Secrets:        csi.SecretsFromData(publishSecret.Data),
		FSGroup:        &fsGroup,
		CSIDriver:      csiDriver,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rel(kRoot, mounter.GetPath()) != rel(pRoot, published.TargetPath) {
		t.Errorf("publish path: kubelet %s, podstart %s", rel(kRoot, mounter.GetPath()), rel(pRoot, published.TargetPath))
	}
	compareCalls(t, "publish", kDriver, kRoot, pDriver, pRoot)
	compareTrees(t, "publish", kRoot, pRoot)

	// Unpublish, then unstage.
	unmounter, err := plug.NewUnmounter(pv.Name, pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	if err := unmounter.TearDown(); err != nil {
		t.Fatal(err)
	}
	if err := p.Unpublish(ctx, csi.UnpublishRequest{Driver: driverName, VolumeHandle: vol.VolumeHandle, PodUID: string(pod.UID), SpecName: pv.Name}); err != nil {
		t.Fatal(err)
	}
	compareCalls(t, "unpublish", kDriver, kRoot, pDriver, pRoot)
	compareTrees(t, "unpublish", kRoot, pRoot)
	du, err := plug.(volume.DeviceMountableVolumePlugin).NewDeviceUnmounter()
	if err != nil {
		t.Fatal(err)
	}
	if err := du.UnmountDevice(kStaging); err != nil {
		t.Fatal(err)
	}
	if err := p.Unstage(ctx, csi.UnstageRequest{Driver: driverName, VolumeHandle: vol.VolumeHandle}); err != nil {
		t.Fatal(err)
	}
	compareCalls(t, "unstage", kDriver, kRoot, pDriver, pRoot)
	compareTrees(t, "unstage", kRoot, pRoot)

	// A CSI inline volume: published only.
	inlineSpec := volume.NewSpecFromVolume(inline)
	im, err := plug.NewMounter(inlineSpec, pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := im.SetUp(volume.MounterArgs{FsGroup: &fsGroup}); err != nil {
		t.Fatal(err)
	}
	ivol, err := csi.VolumeFromInline(pod, inline)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, csi.PublishRequest{Volume: ivol, Pod: pod, Secrets: csi.SecretsFromData(inlineSecret.Data), FSGroup: &fsGroup, CSIDriver: csiDriver}); err != nil {
		t.Fatal(err)
	}
	compareCalls(t, "inline publish", kDriver, kRoot, pDriver, pRoot)
	compareTrees(t, "inline publish", kRoot, pRoot)
	iu, err := plug.NewUnmounter(inline.Name, pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	if err := iu.TearDown(); err != nil {
		t.Fatal(err)
	}
	if err := p.Unpublish(ctx, csi.UnpublishRequest{Driver: driverName, VolumeHandle: ivol.VolumeHandle, PodUID: string(pod.UID), SpecName: inline.Name}); err != nil {
		t.Fatal(err)
	}
	compareCalls(t, "inline unpublish", kDriver, kRoot, pDriver, pRoot)
	compareTrees(t, "inline unpublish", kRoot, pRoot)

	// A block volume: SetUpDevice and MapPodDevice, then UnmapPodDevice
	// and TearDownDevice.
	bplug, err := host.GetPluginMgr().FindMapperPluginByName(kcsi.CSIPluginName)
	if err != nil {
		t.Fatal(err)
	}
	bspec := volume.NewSpecFromPersistentVolume(blockPV.DeepCopy(), false)
	mapper, err := bplug.NewBlockVolumeMapper(bspec, pod)
	if err != nil {
		t.Fatal(err)
	}
	custom := mapper.(volume.CustomBlockVolumeMapper)
	if _, err := custom.SetUpDevice(); err != nil {
		t.Fatal(err)
	}
	if _, err := custom.MapPodDevice(); err != nil {
		t.Fatal(err)
	}
	bvol, err := csi.VolumeFromPV(blockPV, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stage(ctx, csi.StageRequest{Volume: bvol, PublishContext: blockAttachment.Status.AttachmentMetadata, Secrets: csi.SecretsFromData(stageSecret.Data), CSIDriver: csiDriver}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, csi.PublishRequest{Volume: bvol, Pod: pod, PublishContext: blockAttachment.Status.AttachmentMetadata, Secrets: csi.SecretsFromData(publishSecret.Data), CSIDriver: csiDriver}); err != nil {
		t.Fatal(err)
	}
	compareCalls(t, "block map", kDriver, kRoot, pDriver, pRoot)
	compareTrees(t, "block map", kRoot, pRoot)
	unmapper, err := bplug.NewBlockVolumeUnmapper(blockPV.Name, pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	cu := unmapper.(volume.CustomBlockVolumeUnmapper)
	if err := cu.UnmapPodDevice(); err != nil {
		t.Fatal(err)
	}
	globalMap, _ := mapper.GetGlobalMapPath(bspec)
	if err := cu.TearDownDevice(globalMap, ""); err != nil {
		t.Fatal(err)
	}
	if err := p.Unpublish(ctx, csi.UnpublishRequest{Driver: driverName, VolumeHandle: "blk-7", PodUID: string(pod.UID), SpecName: blockPV.Name, Block: true}); err != nil {
		t.Fatal(err)
	}
	if err := p.Unstage(ctx, csi.UnstageRequest{Driver: driverName, VolumeHandle: "blk-7", SpecName: blockPV.Name, Block: true}); err != nil {
		t.Fatal(err)
	}
	compareCalls(t, "block unmap", kDriver, kRoot, pDriver, pRoot)
	compareTrees(t, "block unmap", kRoot, pRoot)

	comparePaths(t, plug, bplug, kRoot)
}

func ptr[T any](v T) *T { return &v }

var cmpIgnoreServerMeta = cmp.FilterPath(func(p cmp.Path) bool {
	switch p.Last().String() {
	case ".ResourceVersion", ".CreationTimestamp", ".ManagedFields", ".Generation", ".UID":
		return true
	}
	return false
}, cmp.Ignore())

func rel(root, p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return r
}

// compareCalls compares the calls each driver received since the last
// comparison, with the root directories replaced by "<root>".
func compareCalls(t *testing.T, step string, kd *csifake.Driver, kRoot string, pd *csifake.Driver, pRoot string) {
	t.Helper()
	norm := func(calls []csifake.Call, root string) []proto.Message {
		var out []proto.Message
		for _, c := range calls {
			m := proto.Clone(c.Request)
			r := m.ProtoReflect()
			r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
				if fd.Kind() == protoreflect.StringKind && !fd.IsList() && !fd.IsMap() {
					r.Set(fd, protoreflect.ValueOfString(strings.ReplaceAll(v.String(), root, "<root>")))
				}
				return true
			})
			out = append(out, m)
		}
		return out
	}
	km, pm := kd.Methods(), pd.Methods()
	if len(km) == 0 {
		t.Errorf("%s: kubelet made no CSI call: nothing compared", step)
	}
	if diff := cmp.Diff(km, pm); diff != "" {
		t.Errorf("%s: CSI calls (-kubelet +podstart):\n%s", step, diff)
	} else if diff := cmp.Diff(norm(kd.Calls(), kRoot), norm(pd.Calls(), pRoot), protocmp.Transform()); diff != "" {
		t.Errorf("%s: CSI requests (-kubelet +podstart):\n%s", step, diff)
	}
	kd.Reset()
	pd.Reset()
}

// compareTrees compares the files under pods/ and plugins/ of both roots,
// with vol_data.json compared byte for byte.
func compareTrees(t *testing.T, step, kRoot, pRoot string) {
	t.Helper()
	tree := func(root string) map[string]string {
		out := map[string]string{}
		for _, top := range []string{"pods", "plugins"} {
			_ = filepath.Walk(filepath.Join(root, top), func(path string, fi os.FileInfo, err error) error {
				if err != nil {
					return nil
				}
				v := fi.Mode().String()
				if filepath.Base(path) == "vol_data.json" {
					b, _ := os.ReadFile(path)
					v += " " + string(b)
				}
				out[rel(root, path)] = v
				return nil
			})
		}
		return out
	}
	k, p := tree(kRoot), tree(pRoot)
	if len(k) == 0 {
		t.Errorf("%s: kubelet left no file: nothing compared", step)
	}
	if diff := cmp.Diff(k, p); diff != "" {
		t.Errorf("%s: files (-kubelet +podstart):\n%s", step, diff)
	}
}

// comparePaths compares kubelet's staging, publish and block paths with
// podstart's Layout on random driver names, volume handles, spec names and
// pod UIDs (names the API server accepts; handles of any bytes podstart
// accepts).
func comparePaths(t *testing.T, plug volume.VolumePlugin, bplug volume.BlockVolumePlugin, kRoot string) {
	t.Helper()
	r := newRand(t)
	d := differences{t: t}
	l := csi.Layout{Root: kRoot}
	label := func() string {
		const chars = "abcdefghijklmnopqrstuvwxyz0123456789-"
		n := 1 + r.IntN(12)
		b := []byte{chars[r.IntN(36)]}
		for i := 1; i < n-1; i++ {
			b = append(b, chars[r.IntN(len(chars))])
		}
		if n > 1 {
			b = append(b, chars[r.IntN(36)])
		}
		return string(b)
	}
	subdomain := func() string {
		parts := []string{label()}
		for r.IntN(3) == 0 {
			parts = append(parts, label())
		}
		return strings.Join(parts, ".")
	}
	dm, err := plug.(volume.DeviceMountableVolumePlugin).NewDeviceMounter()
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for range cases(2000) {
		driver, spec, uid := subdomain(), subdomain(), label()+"-"+label()
		for len(driver) > 63 { // a CSI driver name is at most 63 characters (the API server's rule)
			driver = subdomain()
		}
		handle := trickyString(r, 8)
		if r.IntN(4) == 0 {
			handle = "projects/" + label() + "/disks/" + label()
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: spec},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle},
			}},
		}
		vspec := volume.NewSpecFromPersistentVolume(pv, false)
		kStaging, kerr := dm.GetDeviceMountPath(vspec)
		pStaging, perr := l.StagingPath(driver, handle)
		if perr != nil {
			// podstart refuses only handles kubelet would send as invalid
			// protobuf strings (or with NUL): nothing else.
			if handle != "" && !strings.ContainsRune(handle, 0) && utf8.ValidString(handle) {
				d.add("StagingPath(%q, %q) refused: %v", driver, handle, perr)
			}
			continue
		}
		if kerr != nil || kStaging != pStaging {
			d.add("staging path of %q %q: kubelet %q (%v), podstart %q", driver, handle, kStaging, kerr, pStaging)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n", UID: types.UID(uid)}}
		m, err := plug.NewMounter(vspec, pod)
		if err != nil {
			t.Fatal(err)
		}
		pPublish, err := l.PublishPath(uid, spec)
		if err != nil || m.GetPath() != pPublish {
			d.add("publish path of %q %q: kubelet %q, podstart %q (%v)", uid, spec, m.GetPath(), pPublish, err)
		}
		bm, err := bplug.NewBlockVolumeMapper(vspec, pod)
		if err != nil {
			t.Fatal(err)
		}
		bp, err := l.BlockPaths(uid, spec)
		if err != nil {
			d.add("block paths of %q %q refused: %v", uid, spec, err)
			continue
		}
		kGlobal, _ := bm.GetGlobalMapPath(vspec)
		kDir, kName := bm.GetPodDeviceMapPath()
		if kGlobal != bp.GlobalMap || kDir != bp.PodDeviceMapDir || kName != bp.PodDeviceMapName {
			d.add("block paths of %q %q: kubelet %q %q %q, podstart %+v", uid, spec, kGlobal, kDir, kName, bp)
		}
		data, err := csi.ReadVolumeData(bp.DataDir) // written by kubelet's NewBlockVolumeMapper
		if err != nil || data.SpecVolID != spec || data.VolumeHandle != handle || data.AttachmentID != csi.AttachmentName(handle, driver, "fakeNode") {
			d.add("kubelet's block vol_data.json for %q %q read as %+v (%v)", spec, handle, data, err)
		}
		compared++
	}
	d.report(cases(2000), "CSI path cases")
	if compared < cases(2000)/2 {
		t.Errorf("only %d of %d cases compared", compared, cases(2000))
	}
}
