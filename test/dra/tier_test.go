package dratier

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	podruntime "github.com/podstart/podstart/runtime"
)

const (
	deviceClass = "example" // run.sh's DeviceClass
	requestName = "dev"
	podClaim    = "res" // the pod's name for its claim
)

type tier struct {
	cs        kubernetes.Interface
	rt        *podruntime.Client
	node      string
	kind      string // podstart or kubelet
	driver    string
	driverLog string
	cdiDir    string
	image     string
	report    string
	ns        string
}

func setup(t *testing.T) *tier {
	t.Helper()
	if os.Getenv("PODSTART_DRA_REQUIRED") != "1" {
		t.Skip("the DRA tier runs from test/dra/run.sh (PODSTART_DRA_REQUIRED=1)")
	}
	tr := &tier{node: os.Getenv("PODSTART_DRA_NODE"), kind: os.Getenv("PODSTART_DRA_NODE_KIND"),
		driver: os.Getenv("PODSTART_DRA_DRIVER"), driverLog: os.Getenv("PODSTART_DRA_DRIVER_LOG"),
		cdiDir: os.Getenv("PODSTART_DRA_CDI_DIR"), image: os.Getenv("PODSTART_DRA_IMAGE"),
		report: os.Getenv("PODSTART_DRA_REPORT")}
	kubeconfig, endpoint := os.Getenv("PODSTART_DRA_KUBECONFIG"), os.Getenv("PODSTART_CRI_ENDPOINT")
	for k, v := range map[string]string{"PODSTART_DRA_NODE": tr.node, "PODSTART_DRA_NODE_KIND": tr.kind,
		"PODSTART_DRA_DRIVER": tr.driver, "PODSTART_DRA_DRIVER_LOG": tr.driverLog, "PODSTART_DRA_CDI_DIR": tr.cdiDir,
		"PODSTART_DRA_IMAGE": tr.image, "PODSTART_DRA_REPORT": tr.report, "PODSTART_DRA_KUBECONFIG": kubeconfig,
		"PODSTART_CRI_ENDPOINT": endpoint} {
		if v == "" {
			t.Fatalf("%s must be set (run.sh sets it)", k)
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if tr.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if tr.rt, err = podruntime.Dial(ctx, endpoint, podruntime.WithConnectTimeout(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.rt.Close() })
	tr.ns = "dra-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if len(tr.ns) > 40 {
		tr.ns = tr.ns[:40]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tr.ns}}
	if _, err := tr.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The namespace's default ServiceAccount is made by the controller
	// manager; pods wait for it.
	tr.poll(t, time.Minute, "the default ServiceAccount", func() (bool, error) {
		_, err := tr.cs.CoreV1().ServiceAccounts(tr.ns).Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil, nil
	})
	t.Cleanup(func() {
		_ = tr.cs.CoreV1().Namespaces().Delete(context.Background(), tr.ns, metav1.DeleteOptions{})
	})
	return tr
}

// poll checks cond every 200ms until it holds (the API server and node
// run on their own time; nothing here can be waited on otherwise).
func (tr *tier) poll(t *testing.T, limit time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not in %s", what, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// claimSpec is the test driver's example claim: one device of the
// DeviceClass, with opaque parameters the driver turns into env
// (user_a=b).
func claimSpec(driver string) resourcev1.ResourceClaimSpec {
	return resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: requestName, Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: deviceClass}}},
		Config: []resourcev1.DeviceClaimConfiguration{{DeviceConfiguration: resourcev1.DeviceConfiguration{
			Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(`{"a":"b"}`)}}}}},
	}}
}

// newPod is a pod whose container prints the environment the CDI device
// gave it, then sleeps; the claim source is a template or a claim.
func (tr *tier) newPod(name string, src corev1.PodResourceClaim) *corev1.Pod {
	grace := int64(1)
	src.Name = podClaim
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tr.ns},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "c", Image: tr.image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:   []string{"sh", "-c", "env | grep -E '^(user|admin|claim)_' | sort; echo done; exec sleep 3600"},
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: podClaim}}},
			}},
			ResourceClaims: []corev1.PodResourceClaim{src},
		},
	}
}

// waitReady waits until the pod is Ready on the tier's node.
func (tr *tier) waitReady(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	tr.poll(t, 3*time.Minute, "pod "+name+" Ready", func() (bool, error) {
		p, err := tr.cs.CoreV1().Pods(tr.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("pod ended: %s %s", p.Status.Phase, p.Status.Message)
		}
		pod = p
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if pod.Spec.NodeName != tr.node {
		t.Fatalf("pod scheduled to %q, want %q", pod.Spec.NodeName, tr.node)
	}
	return pod
}

// logs waits for the container's output to end with "done" and returns
// its lines before it, read from its CRI log file (the runtime's
// LogPath, the same on both nodes; kubelet here serves its API on
// loopback only, so the API server cannot reach its containerLogs).
func (tr *tier) logs(t *testing.T, pod *corev1.Pod) []string {
	t.Helper()
	ctx := context.Background()
	cs, err := tr.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{
		"io.kubernetes.pod.uid": string(pod.UID), "io.kubernetes.container.name": "c"}})
	if err != nil || len(cs) != 1 {
		t.Fatalf("the pod's container through CRI: %d, %v", len(cs), err)
	}
	st, err := tr.rt.ContainerStatus(ctx, cs[0].Id, false)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	tr.poll(t, time.Minute, "pod "+pod.Name+"'s log "+st.Status.LogPath, func() (bool, error) {
		raw, err := os.ReadFile(st.Status.LogPath)
		if err != nil {
			return false, nil // not written yet
		}
		lines = nil
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			// CRI log format: <time> <stream> <P|F> <text>
			if f := strings.SplitN(l, " ", 4); len(f) == 4 {
				lines = append(lines, f[3])
			}
		}
		if len(lines) > 0 && lines[len(lines)-1] == "done" {
			lines = lines[:len(lines)-1]
			return true, nil
		}
		return false, nil
	})
	return lines
}

// criContainer reads the pod's container "c" through CRI, verbose: the
// CDI devices of its ContainerConfig and the env of its OCI spec, as
// containerd 2 reports them in the "info" entry.
func (tr *tier) criContainer(t *testing.T, pod *corev1.Pod) (cdi []string, env []string) {
	t.Helper()
	ctx := context.Background()
	cs, err := tr.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{
		"io.kubernetes.pod.uid": string(pod.UID), "io.kubernetes.container.name": "c"}})
	if err != nil || len(cs) != 1 {
		t.Fatalf("the pod's container through CRI: %d, %v", len(cs), err)
	}
	st, err := tr.rt.ContainerStatus(ctx, cs[0].Id, true)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Config struct {
			CDIDevices []struct {
				Name string `json:"name"`
			} `json:"CDI_devices"`
		} `json:"config"`
		RuntimeSpec struct {
			Process struct {
				Env []string `json:"env"`
			} `json:"process"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil {
		t.Fatalf("ContainerStatus verbose info: %v", err)
	}
	for _, d := range info.Config.CDIDevices {
		cdi = append(cdi, d.Name)
	}
	for _, e := range info.RuntimeSpec.Process.Env {
		if strings.HasPrefix(e, "user_") || strings.HasPrefix(e, "admin_") || strings.HasPrefix(e, "claim_") {
			env = append(env, e)
		}
	}
	sort.Strings(env)
	return cdi, env
}

// writeReport saves one scenario's findings for TestCompare.
func (tr *tier) writeReport(t *testing.T, scenario string, r *scenarioReport) {
	t.Helper()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(tr.report, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tr.report, tr.kind+"."+scenario+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
