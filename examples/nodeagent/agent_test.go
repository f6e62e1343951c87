package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/defaults"
	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

const nodeName = "agent-1"

type harness struct {
	client  *fakeClientset
	clock   *testingclock.FakeClock
	rt      *fake.Runtime
	root    string
	mounter *fakemount.Mounter
}

// start runs the agent against a fake API server and runtime/fake until
// the test ends, and waits until it is ready.
func start(t *testing.T, opts ...fake.Option) *harness {
	t.Helper()
	return startWith(t, nil, opts...)
}

// startWith is start with the agent's Config changed by edit first.
func startWith(t *testing.T, edit func(*Config), opts ...fake.Option) *harness {
	t.Helper()
	h := &harness{
		client: newFakeClientset(),
		clock:  testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		rt:     fake.New(opts...),
		root:   t.TempDir(),
		// The runtime is a fake: the volumes' tmpfs are too.
		mounter: fakemount.New(),
	}
	cfg := Config{Client: h.client, Runtime: h.rt, NodeName: nodeName, RootDir: h.root,
		PodLogsDir: filepath.Join(h.root, "logs"), Clock: h.clock, Mounter: h.mounter}
	if edit != nil {
		edit(&cfg)
	}
	runAgent(t, cfg)
	return h
}

// eventually waits until cond holds, failing the test at the deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

func testPod(name string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid")},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.35"}},
		},
	}
	defaults.Pod(pod) // what the API server would have set
	return pod
}

func (h *harness) get(t *testing.T, name string) (*corev1.Pod, bool) {
	pod, err := h.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return pod, true
}

func TestPodReachesRunning(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"}, Data: map[string][]byte{"token": []byte("s3cret")}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf", Namespace: "default"}, Data: map[string]string{"app.conf": "x=1"}}
	if _, err := h.client.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server's own Service: every container gets its address.
	master := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}}}
	if _, err := h.client.CoreV1().Services("default").Create(ctx, master, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := testPod("web")
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
		{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		}}}},
		kubeAPIAccess(),
	}
	pod.Labels = map[string]string{"b": "2", "a": "1"}
	defaults.Pod(pod)                       // the API server defaults the volumes (defaultMode) too
	pod.Spec.ServiceAccountName = "default" // as its ServiceAccount admission plugin sets it
	// The API server's TokenRequest, as the fake clientset does not issue tokens.
	h.client.PrependReactor("create", "serviceaccounts", func(action k8stesting.Action) (bool, apiruntime.Object, error) {
		if action.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := action.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		tr.Status = authenticationv1.TokenRequestStatus{Token: "jwt-for-" + string(tr.Spec.BoundObjectRef.UID), ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Hour))}
		return true, tr, nil
	})
	rootCA := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "default"}, Data: map[string]string{"ca.crt": "CA"}}
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(ctx, rootCA, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "creds", MountPath: "/creds"}, {Name: "conf", MountPath: "/conf"}, {Name: "scratch", MountPath: "/scratch"}}
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "token"}}},
		{Name: "ABSENT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{ // optional: left out, as kubelet does
			LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "absent", Optional: ptr.To(true)}}}}
	pod.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "CONF_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}}
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var got *corev1.Pod
	eventually(t, "pod Running and Ready", func() bool {
		p, ok := h.get(t, "web")
		got = p
		return ok && p.Status.Phase == corev1.PodRunning && ready(p.Status)
	})
	if len(got.Status.ContainerStatuses) != 1 || got.Status.ContainerStatuses[0].State.Running == nil || !got.Status.ContainerStatuses[0].Ready {
		t.Errorf("container statuses %+v", got.Status.ContainerStatuses)
	}
	if cs := got.Status.ContainerStatuses[0]; cs.ContainerID == "" || cs.ImageID == "" {
		t.Errorf("container status without IDs: %+v", cs)
	}
	for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		if !hasCondition(got.Status, c) {
			t.Errorf("no %s=True condition in %+v", c, got.Status.Conditions)
		}
	}
	if got.Status.PodIP == "" || got.Status.StartTime == nil {
		t.Errorf("podIP %q, startTime %v", got.Status.PodIP, got.Status.StartTime)
	}

	// Status is patched only when it changed: every patch changes it, with
	// the UID as precondition.
	patches := 0
	for _, a := range h.client.Actions() {
		if p, ok := a.(k8stesting.PatchActionImpl); ok && p.Resource.Resource == "pods" && p.Subresource == "status" {
			patches++
			if body := string(p.Patch); !strings.Contains(body, `"status":`) || !strings.Contains(body, `"uid":"web-uid"`) {
				t.Errorf("status patch %s", body)
			}
		}
	}
	if patches == 0 {
		t.Error("no status patch")
	}

	// Volumes as kubelet's AtomicWriter leaves them.
	vdir := filepath.Join(podsync.PodDir(h.root, pod), "volumes")
	for path, want := range map[string]string{
		"kubernetes.io~secret/creds/token":                  "s3cret",
		"kubernetes.io~configmap/conf/app.conf":             "x=1",
		"kubernetes.io~downward-api/info/labels":            "a=\"1\"\nb=\"2\"",
		"kubernetes.io~projected/kube-api-access/token":     "jwt-for-web-uid",
		"kubernetes.io~projected/kube-api-access/ca.crt":    "CA",
		"kubernetes.io~projected/kube-api-access/namespace": "default",
	} {
		b, err := os.ReadFile(filepath.Join(vdir, path))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", path, b, err, want)
		}
		if target, err := os.Readlink(filepath.Join(vdir, path)); err != nil || target != filepath.Join("..data", filepath.Base(path)) {
			t.Errorf("%s links to %q (%v), want through ..data", path, target, err)
		}
	}
	// Secret, downward API and projected volumes on a tmpfs, as kubelet's;
	// the ConfigMap on disk.
	var tmpfs []string
	for _, m := range h.mounter.Tmpfs() {
		rel, _ := filepath.Rel(vdir, m.Path)
		tmpfs = append(tmpfs, rel)
	}
	if want := []string{"kubernetes.io~secret/creds", "kubernetes.io~downward-api/info", "kubernetes.io~projected/kube-api-access"}; !slices.Equal(tmpfs, want) {
		t.Errorf("tmpfs mounts %v, want %v", tmpfs, want)
	}
	// The container got the secret's value in its environment and the
	// volumes as mounts.
	var create *runtimeapi.CreateContainerRequest
	for _, c := range h.rt.Calls() {
		if r, ok := c.Request.(*runtimeapi.CreateContainerRequest); ok {
			create = r
		}
	}
	if create == nil {
		t.Fatal("no CreateContainer call")
	}
	env := map[string]string{}
	for _, kv := range create.Config.Envs {
		env[kv.Key] = string(kv.Value)
	}
	if _, absent := env["ABSENT"]; env["TOKEN"] != "s3cret" || env["CONF_app.conf"] != "x=1" || absent {
		t.Errorf("env %v: want TOKEN and CONF_app.conf, no ABSENT", slices.Sorted(maps.Keys(env)))
	}
	if env["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" || env["KUBERNETES_SERVICE_PORT"] != "443" || env["KUBERNETES_PORT_443_TCP"] != "tcp://10.96.0.1:443" {
		t.Errorf("env %v: want the kubernetes Service's variables (client-go's in-cluster config)", slices.Sorted(maps.Keys(env)))
	}
	mounted := map[string]string{}
	for _, m := range create.Config.Mounts {
		mounted[m.ContainerPath] = m.HostPath
	}
	if mounted["/creds"] != filepath.Join(vdir, "kubernetes.io~secret/creds") {
		t.Errorf("mounts %v", mounted)
	}
}

// kubeAPIAccess is the volume the API server adds to every pod with a
// service account.
func kubeAPIAccess() corev1.Volume {
	exp := int64(3607)
	return corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
	}}}}
}

func ready(s corev1.PodStatus) bool { return hasCondition(s, corev1.PodReady) }

func hasCondition(s corev1.PodStatus, t corev1.PodConditionType) bool {
	for _, c := range s.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func TestGracefulDeletion(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	// A pod bound to another node is not ours (the fake clientset ignores
	// field selectors; the informer delivers it before the next pod).
	other := testPod("other")
	other.Spec.NodeName = "elsewhere"
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := testPod("doomed")
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod Running", func() bool {
		p, ok := h.get(t, "doomed")
		return ok && p.Status.Phase == corev1.PodRunning
	})
	// What the API server does on a graceful delete: it sets the deletion
	// timestamp and grace period and waits for the kubelet.
	p, _ := h.get(t, "doomed")
	now := metav1.NewTime(time.Now())
	grace := int64(30)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	if _, err := h.client.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod object deleted", func() bool {
		_, ok := h.get(t, "doomed")
		return !ok
	})
	// Killed with the deletion's grace period, then deleted with grace
	// period 0 for that UID only, as kubelet does.
	var stopTimeout int64 = -1
	for _, c := range h.rt.Calls() {
		if r, ok := c.Request.(*runtimeapi.StopContainerRequest); ok {
			stopTimeout = r.Timeout
		}
	}
	if stopTimeout != grace {
		t.Errorf("StopContainer timeout %d, want %d", stopTimeout, grace)
	}
	var del k8stesting.DeleteActionImpl
	for _, a := range h.client.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok && d.Resource.Resource == "pods" {
			del = d
		}
	}
	if o := del.DeleteOptions; o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 || o.Preconditions == nil || *o.Preconditions.UID != pod.UID {
		t.Errorf("pod deleted with %+v", o)
	}
	sandboxes, err := h.rt.ListPodSandbox(ctx, nil)
	if err != nil || len(sandboxes) != 0 {
		t.Errorf("sandboxes left: %v, %v", sandboxes, err)
	}
	if p, _ := h.get(t, "other"); p.Status.Phase != "" {
		t.Errorf("pod of another node got status %+v", p.Status)
	}
	if _, err := os.Stat(podsync.PodDir(h.root, pod)); !os.IsNotExist(err) {
		t.Errorf("pod directory left: %v", err)
	}
}

func TestNodeAndLease(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	node, err := h.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := node.Status.NodeInfo.KubeletVersion; v != "v1.37.2-podstart" {
		t.Errorf("kubeletVersion %q", v)
	}
	if v := node.Status.NodeInfo.ContainerRuntimeVersion; v == "" {
		t.Error("no containerRuntimeVersion")
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		if q, ok := node.Status.Capacity[r]; !ok || q.IsZero() {
			t.Errorf("capacity %s = %v", r, q)
		}
		if _, ok := node.Status.Allocatable[r]; !ok {
			t.Errorf("no allocatable %s", r)
		}
	}
	want := map[corev1.NodeConditionType]string{corev1.NodeReady: "True", corev1.NodeMemoryPressure: "False", corev1.NodeDiskPressure: "False", corev1.NodePIDPressure: "False"}
	for _, c := range node.Status.Conditions {
		if string(c.Status) == want[c.Type] {
			delete(want, c.Type)
		}
		if c.Type == corev1.NodeReady && c.Reason != "KubeletReady" {
			t.Errorf("Ready reason %q", c.Reason)
		}
	}
	if len(want) != 0 {
		t.Errorf("conditions missing or wrong: %v in %+v", want, node.Status.Conditions)
	}
	types := map[corev1.NodeAddressType]bool{}
	for _, a := range node.Status.Addresses {
		types[a.Type] = true
	}
	if !types[corev1.NodeInternalIP] || !types[corev1.NodeHostName] {
		t.Errorf("addresses %+v", node.Status.Addresses)
	}

	renewTime := func() time.Time {
		l, err := h.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, nodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return time.Time{}
		}
		if err != nil {
			t.Fatal(err)
		}
		if *l.Spec.HolderIdentity != nodeName || *l.Spec.LeaseDurationSeconds != 40 || len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != node.UID {
			t.Errorf("lease spec %+v, owners %+v", l.Spec, l.OwnerReferences)
		}
		return l.Spec.RenewTime.Time
	}
	// kubelet's cadence: the Lease every 10 s (plus up to 4% jitter), the
	// status computed as often but patched only when it changed or the
	// report frequency (5 min, ±50% after a change) passed.
	t0 := h.clock.Now()
	heartbeat := func() time.Time {
		n, err := h.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if !c.LastTransitionTime.Time.Equal(t0) {
					t.Errorf("Ready transition %v, want %v", c.LastTransitionTime, t0)
				}
				return c.LastHeartbeatTime.Time
			}
		}
		return time.Time{}
	}
	eventually(t, "lease created", func() bool { return renewTime().Equal(t0) })
	eventually(t, "heartbeat armed", h.clock.HasWaiters)
	h.clock.Step(11 * time.Second)
	t1 := h.clock.Now()
	eventually(t, "lease renewed", func() bool { return renewTime().Equal(t1) })
	eventually(t, "heartbeat armed", h.clock.HasWaiters)
	if hb := heartbeat(); !hb.Equal(t0) {
		t.Errorf("unchanged status patched at %v", hb)
	}
	// Time passes in heartbeat-sized steps, each taken once the Lease was
	// renewed for the last (one 8-minute jump could land in the middle of
	// a status computation and make the runtime look silent for 30 s).
	// The unchanged status is reported within the report frequency, 5 min
	// ±50%, and Ready keeps its transition time.
	for {
		h.clock.Step(11 * time.Second)
		now := h.clock.Now()
		eventually(t, "lease renewed", func() bool { return renewTime().Equal(now) })
		if hb := heartbeat(); hb.After(t0) {
			if d := hb.Sub(t0); d < 150*time.Second || d > 450*time.Second+11*time.Second {
				t.Errorf("unchanged status reported after %v, want 5 min ±50%%", d)
			}
			return
		}
		if now.Sub(t0) > 8*time.Minute {
			t.Fatal("no status report within 8 minutes")
		}
	}
}

// Every goroutine the agent starts ends with Run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A private image is pulled with the pod's pull secret; a pull secret that
// cannot be read is named in kubelet's event once a pull fails (v1.37: not
// when the pull succeeds). The agent, as kubelet, reads only the pod's
// list: a service account's imagePullSecrets reach a pod through the API
// server's ServiceAccount admission, which the fake clientset does not
// run.
func TestPullSecretOfThePod(t *testing.T) {
	h := start(t, fake.WithRegistryAuth("registry.example.com", "robot", "hunter2"), fake.WithRegistryAuth("other.example.com", "someone", "else"))
	ctx := context.Background()
	cfg := `{"auths":{"registry.example.com":{"username":"robot","password":"hunter2"}}}`
	objs := []apiruntime.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "default"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default"},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}},
	}
	for _, o := range objs {
		if err := h.client.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	pod := testPod("private")
	pod.Spec.Containers[0].Image = "registry.example.com/team/app:1.0"
	pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "missing"}, {Name: "regcred"}} // missing: skipped, as kubelet does
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "private pod Running", func() bool {
		p, ok := h.get(t, "private")
		return ok && p.Status.Phase == corev1.PodRunning
	})
	for _, c := range h.rt.Calls() {
		if r, ok := c.Request.(*runtimeapi.PullImageRequest); ok && r.GetAuth().GetUsername() != "robot" {
			t.Errorf("pulled with auth %v", r.GetAuth())
		}
	}
	for _, a := range h.client.Actions() {
		if a.GetResource().Resource == "serviceaccounts" {
			t.Errorf("the agent read a service account (%s), which kubelet never does", a.GetVerb())
		}
	}
	// A pod whose pull fails: kubelet's event for the secret left out.
	denied := testPod("denied")
	denied.Spec.Containers[0].Image = "other.example.com/team/app:1.0"
	denied.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "missing"}}
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, denied, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a FailedToRetrieveImagePullSecret event", func() bool {
		evs, err := h.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedToRetrieveImagePullSecret" && e.InvolvedObject.Name == "private" {
				t.Errorf("event for a pod whose pull succeeded: %s", e.Message)
			}
			if e.Reason == "FailedToRetrieveImagePullSecret" && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == "denied" &&
				e.Message == "Unable to retrieve some image pull secrets (missing); attempting to pull the image may not succeed." {
				return true
			}
		}
		return false
	})
}

// An API server that fails the node's registration when the agent starts
// (down, or hanging: the chaos tier's seed 8 saw "TLS handshake timeout")
// delays the agent, as kubelet's registerWithAPIServer retries; it used to
// end Run with the error.
func TestRegistrationRetried(t *testing.T) {
	client := newFakeClientset()
	failures := 2
	var mu sync.Mutex
	client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, apiruntime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if failures == 0 {
			return false, nil, nil
		}
		failures--
		return true, nil, apierrors.NewServiceUnavailable("the API server is starting")
	})
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	// Each failed try arms one wait (100 ms, then 200 ms); the clock steps
	// once it is armed. Nothing else waits on the clock before the node
	// is registered.
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		for _, d := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
			for !clk.HasWaiters() {
				time.Sleep(time.Millisecond) // polling interval, not synchronisation
			}
			clk.Step(d)
		}
	}()
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Client: client, Runtime: fake.New(), NodeName: nodeName, RootDir: root,
			PodLogsDir: filepath.Join(root, "logs"), Clock: clk, Mounter: fakemount.New(), Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("Run ended before the node was registered: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("agent not ready after 60s") // its goroutines leak: goleak reports them
	}
	<-stepped
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	if _, err := client.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{}); err != nil {
		t.Fatalf("node after two failed registrations: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if failures != 0 {
		t.Errorf("%d failures left", failures)
	}
}
