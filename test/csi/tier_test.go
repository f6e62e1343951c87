package csi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// tier is the running environment run.sh describes in its env file.
type tier struct {
	t      *testing.T
	cs     kubernetes.Interface
	node   string // the node's name
	kind   string // kubelet or podstart
	root   string // the node's root dir
	calls  string // the driver's record of calls
	data   string // the driver's data dir
	driver string
	class  string // the StorageClass
	image  string
	report string
	names  *names
	cfg    *rest.Config // the admin's
}

func required() bool { return os.Getenv("PODSTART_CSI_REQUIRED") == "1" }

func setup(t *testing.T) *tier {
	t.Helper()
	env := map[string]string{}
	for _, k := range []string{"KUBECONFIG", "NODE", "NODE_KIND", "ROOT", "CALLS", "DATA", "DRIVER", "STORAGE_CLASS", "IMAGE", "REPORT"} {
		env[k] = os.Getenv("PODSTART_CSI_" + k)
		if env[k] == "" {
			if required() {
				t.Fatalf("PODSTART_CSI_REQUIRED=1 but PODSTART_CSI_%s is unset (run 'bash test/csi/run.sh')", k)
			}
			t.Skipf("PODSTART_CSI_%s is unset: this tier runs under 'bash test/csi/run.sh' (see README)", k)
		}
	}
	if os.Getuid() != 0 {
		if required() {
			t.Fatal("PODSTART_CSI_REQUIRED=1 but not running as root")
		}
		t.Skip("not root: the tier reads the node's mounts and the driver's data")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", env["KUBECONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(env["REPORT"], 0o755); err != nil {
		t.Fatal(err)
	}
	return &tier{t: t, cs: cs, node: env["NODE"], kind: env["NODE_KIND"], root: env["ROOT"], calls: env["CALLS"],
		data: env["DATA"], driver: env["DRIVER"], class: env["STORAGE_CLASS"], image: env["IMAGE"], report: env["REPORT"],
		names: newNames(env["ROOT"]), cfg: cfg}
}

// eventually polls cond until it holds, failing the test with cond's last
// word after limit.
func (tr *tier) eventually(limit time.Duration, what string, cond func() (bool, string)) {
	tr.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tr.t.Fatalf("timed out after %v waiting for %s: %s", limit, what, why)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// namespace makes a namespace of the test's own, waits for its default
// service account (kube-controller-manager makes it; admission wants it)
// and deletes it when the test ends.
func (tr *tier) namespace(name string) string {
	tr.t.Helper()
	_, err := tr.cs.CoreV1().Namespaces().Create(ctx(tr.t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		tr.t.Fatal(err)
	}
	tr.t.Cleanup(func() {
		tr.cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	tr.eventually(time.Minute, "the default service account of "+name, func() (bool, string) {
		_, err := tr.cs.CoreV1().ServiceAccounts(name).Get(ctx(tr.t), "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	return name
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitPodReady waits until the pod is Ready on the tier's node and
// remembers its UID for the calls' normalisation.
func (tr *tier) waitPodReady(ns, name string) *corev1.Pod {
	tr.t.Helper()
	var pod *corev1.Pod
	tr.eventually(3*time.Minute, "pod "+ns+"/"+name+" Ready", func() (bool, string) {
		p, err := tr.cs.CoreV1().Pods(ns).Get(ctx(tr.t), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		if p.Spec.NodeName != "" && p.Spec.NodeName != tr.node {
			tr.t.Fatalf("pod %s/%s went to node %s, not %s", ns, name, p.Spec.NodeName, tr.node)
		}
		return podReady(p), fmt.Sprintf("phase %s, conditions %v, events: %s", p.Status.Phase, p.Status.Conditions, tr.events(ns, name))
	})
	tr.names.pod(pod)
	return pod
}

// events is a one-line digest of an object's events, for failures.
func (tr *tier) events(ns, name string) string {
	evs, err := tr.cs.CoreV1().Events(ns).List(ctx(tr.t), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range evs.Items {
		out = append(out, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message))
	}
	return strings.Join(out, "; ")
}

// waitPodGone waits until the pod's object is gone from the API server:
// the node deletes it only once its containers are gone and its volumes
// unmounted.
func (tr *tier) waitPodGone(ns, name string) {
	tr.t.Helper()
	tr.eventually(3*time.Minute, "pod "+ns+"/"+name+" gone", func() (bool, string) {
		p, err := tr.cs.CoreV1().Pods(ns).Get(ctx(tr.t), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("phase %s", p.Status.Phase)
	})
}

// pvOf waits until the claim is bound and returns its PV's name and
// volume handle, remembered for the normalisation.
func (tr *tier) pvOf(ns, claim string) (pv, handle string) {
	tr.t.Helper()
	tr.eventually(2*time.Minute, "claim "+ns+"/"+claim+" bound", func() (bool, string) {
		c, err := tr.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx(tr.t), claim, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pv = c.Spec.VolumeName
		return c.Status.Phase == corev1.ClaimBound, fmt.Sprintf("phase %s; events: %s", c.Status.Phase, tr.events(ns, claim))
	})
	p, err := tr.cs.CoreV1().PersistentVolumes().Get(ctx(tr.t), pv, metav1.GetOptions{})
	if err != nil {
		tr.t.Fatal(err)
	}
	if p.Spec.CSI == nil || p.Spec.CSI.Driver != tr.driver {
		tr.t.Fatalf("PV %s is not a volume of %s: %+v", pv, tr.driver, p.Spec.PersistentVolumeSource)
	}
	tr.names.pv(pv, ns+"/"+claim, p.Spec.CSI.VolumeHandle)
	tr.names.add(p.Spec.CSI.VolumeHandle, "<handle "+ns+"/"+claim+">")
	return pv, p.Spec.CSI.VolumeHandle
}

// waitPVGone waits until the PV is deleted (the provisioner's DeleteVolume
// done) and its data directory with it.
func (tr *tier) waitPVGone(pv, handle string) {
	tr.t.Helper()
	tr.eventually(2*time.Minute, "PV "+pv+" deleted", func() (bool, string) {
		_, err := tr.cs.CoreV1().PersistentVolumes().Get(ctx(tr.t), pv, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if _, err := os.Stat(filepath.Join(tr.data, "volumes", handle)); !errors.Is(err, os.ErrNotExist) {
		tr.t.Errorf("the data of deleted PV %s is still there (%v)", pv, err)
	}
}

// waitNoAttachments waits until no VolumeAttachment names the node: the
// attach/detach controller detaches once the node reports the volumes no
// longer in use.
func (tr *tier) waitNoAttachments() {
	tr.t.Helper()
	tr.eventually(3*time.Minute, "no VolumeAttachment for "+tr.node, func() (bool, string) {
		vas, err := tr.cs.StorageV1().VolumeAttachments().List(ctx(tr.t), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for _, va := range vas.Items {
			if va.Spec.NodeName == tr.node {
				left = append(left, va.Name)
			}
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
}

// mountsUnder lists the mount points under dir in /proc/self/mountinfo
// (dir itself excepted: kubelet bind-mounts its root dir onto itself).
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// waitNothingMounted waits until nothing is mounted under the node's pods
// and plugins directories: every publish and stage undone.
func (tr *tier) waitNothingMounted() {
	tr.t.Helper()
	tr.eventually(2*time.Minute, "nothing mounted under "+tr.root, func() (bool, string) {
		ms, err := mountsUnder(tr.root)
		if err != nil {
			return false, err.Error()
		}
		return len(ms) == 0, strings.Join(ms, ", ")
	})
}

// isMounted reports whether path is a mount point.
func isMounted(path string) bool {
	ms, _ := mountsUnder(filepath.Dir(path))
	for _, m := range ms {
		if m == path {
			return true
		}
	}
	return false
}

// csiMountOf is where the node publishes the pod's CSI volume named
// specName (a PV's name, or the pod's volume name for an inline one), as
// kubelet lays it out: <root>/pods/<uid>/volumes/kubernetes.io~csi/<name>/mount.
func (tr *tier) csiMountOf(pod *corev1.Pod, specName string) string {
	return filepath.Join(tr.root, "pods", string(pod.UID), "volumes", "kubernetes.io~csi", specName, "mount")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
