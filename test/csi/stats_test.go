package csi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// summaryVolumes is the pod's stats in the node's /stats/summary, nil
// while the pod is not there: read on the node's port on loopback (where
// the tier's kubelet listens, so the API server's node proxy cannot reach
// it) with the admin's client certificate.
func (tr *tier) summaryVolumes(pod *corev1.Pod) (*statsapi.PodStats, error) {
	port := os.Getenv("PODSTART_CSI_NODE_PORT")
	if port == "" {
		tr.t.Fatal("PODSTART_CSI_NODE_PORT is unset (run.sh writes it)")
	}
	cfg := rest.CopyConfig(tr.cfg)
	cfg.Host = "https://127.0.0.1:" + port
	cfg.TLSClientConfig.Insecure, cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.CAData = true, "", nil
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx(tr.t), http.MethodGet, cfg.Host+"/stats/summary", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /stats/summary: %s: %s %v", resp.Status, raw, err)
	}
	var s statsapi.Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	for i := range s.Pods {
		if s.Pods[i].PodRef.UID == string(pod.UID) {
			return &s.Pods[i], nil
		}
	}
	return nil, nil
}

// volumeShape is a volume stat as compared between nodes: its name, its
// claim and which of its fields are set (the values are the driver's
// statfs of the host, not the node's).
type volumeShape struct {
	Name   string                 `json:"name"`
	PVCRef *statsapi.PVCReference `json:"pvcRef,omitempty"`
	Fields []string               `json:"fields"`
}

func shapeOf(v statsapi.VolumeStats) volumeShape {
	s := volumeShape{Name: v.Name, PVCRef: v.PVCRef}
	for name, p := range map[string]*uint64{"availableBytes": v.AvailableBytes, "capacityBytes": v.CapacityBytes, "usedBytes": v.UsedBytes,
		"inodes": v.Inodes, "inodesFree": v.InodesFree, "inodesUsed": v.InodesUsed} {
		if p != nil {
			s.Fields = append(s.Fields, name)
		}
	}
	if !v.Time.IsZero() {
		s.Fields = append(s.Fields, "time")
	}
	sort.Strings(s.Fields)
	return s
}

// statsCalls is the set of NodeGetVolumeStats calls on the node socket
// since off, normalised ("<volume_id> at <volume_path>"), sorted.
func (tr *tier) statsCalls(off int64) []string {
	seen := map[string]bool{}
	for _, c := range tr.callsSince(off) {
		if c.Socket != "node" || !strings.HasSuffix(c.Method, "/NodeGetVolumeStats") {
			continue
		}
		var r struct {
			VolumeID   string `json:"volume_id"`
			VolumePath string `json:"volume_path"`
		}
		if err := json.Unmarshal(c.Request, &r); err != nil {
			tr.t.Fatal(err)
		}
		seen[tr.names.normalise(r.VolumeID+" at "+r.VolumePath)] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestVolumeStats: a pod with a PVC, a generic ephemeral and a CSI inline
// volume of a driver with GET_VOLUME_STATS. The node measures each with
// NodeGetVolumeStats at its publish target on kubelet's 1-minute period
// (so within about two minutes of the pod's start): the same calls as
// kubelet's. On podstart its /stats/summary lists each volume with its
// claim, and the pod's ephemeral storage leaves them out. (Kubelet's own
// summary fails on hosts where cAdvisor finds no filesystem for the root
// device, as on the tier's VM; its entries are then not compared.)
func TestVolumeStats(t *testing.T) {
	tr := setup(t)
	ns := tr.namespace("csi-stats")
	off := tr.callsOffset()
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr(tr.class),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}}}
	if _, err := tr.cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx(t), claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr(int64(5)),
		AutomountServiceAccountToken:  ptr(false), // only the CSI volumes: podstart does not measure in-tree ones
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr(tr.class),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Mi")}}}}}}},
			{Name: "inl", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: tr.driver}}},
		},
		Containers: []corev1.Container{tr.container("echo hi > /data/hello", "/data/hello",
			corev1.VolumeMount{Name: "data", MountPath: "/data"}, corev1.VolumeMount{Name: "scratch", MountPath: "/scratch"},
			corev1.VolumeMount{Name: "inl", MountPath: "/inl"})}}}
	if _, err := tr.cs.CoreV1().Pods(ns).Create(ctx(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := tr.waitPodReady(ns, "db")
	ready := time.Now()
	tr.pvOf(ns, "data")
	tr.pvOf(ns, "db-scratch")
	var calls []string
	tr.eventually(3*time.Minute, "NodeGetVolumeStats for the pod's three CSI volumes", func() (bool, string) {
		calls = tr.statsCalls(off)
		return len(calls) >= 3, fmt.Sprintf("calls %q", calls)
	})
	t.Logf("the three volumes measured %v after the pod was Ready: %q", time.Since(ready).Round(time.Second), calls)
	var shapes []volumeShape
	ps, err := tr.summaryVolumes(p)
	switch {
	case tr.kind == "kubelet" && err != nil && strings.Contains(err.Error(), "failed to get rootFs stats"):
		t.Logf("kubelet's /stats/summary fails on this host, its volume entries are not compared: %v", err)
	case err != nil:
		t.Fatal(err)
	default:
		tr.eventually(time.Minute, "the pod's three CSI volumes in /stats/summary", func() (bool, string) {
			got, err := tr.summaryVolumes(p)
			if err != nil || got == nil {
				return false, fmt.Sprintf("pod stats %v, %v", got, err)
			}
			ps = got
			return len(got.VolumeStats) >= 3, fmt.Sprintf("volumeStats %+v", got.VolumeStats)
		})
		byName := map[string]statsapi.VolumeStats{}
		for _, v := range ps.VolumeStats {
			byName[v.Name] = v
			shapes = append(shapes, shapeOf(v))
		}
		sort.Slice(shapes, func(i, j int) bool { return shapes[i].Name < shapes[j].Name })
		want := map[string]*statsapi.PVCReference{"data": {Name: "data", Namespace: ns}, "scratch": {Name: "db-scratch", Namespace: ns}, "inl": nil}
		for name, ref := range want {
			v, ok := byName[name]
			if !ok {
				t.Errorf("volume %s not in the summary: %+v", name, ps.VolumeStats)
				continue
			}
			if fmt.Sprint(v.PVCRef) != fmt.Sprint(ref) {
				t.Errorf("volume %s: pvcRef %+v, want %+v", name, v.PVCRef, ref)
			}
			if v.CapacityBytes == nil || *v.CapacityBytes == 0 || v.UsedBytes == nil || *v.UsedBytes == 0 || v.Inodes == nil || *v.Inodes == 0 {
				t.Errorf("volume %s: stats %+v, want the driver's statfs", name, v.FsStats)
			}
		}
		// The volumes are bind mounts of the host's filesystem, whose used
		// bytes dwarf the pod's own: counted in its ephemeral storage they
		// would show.
		if e, d := ps.EphemeralStorage, byName["data"]; e == nil || e.UsedBytes == nil || d.UsedBytes == nil || *e.UsedBytes >= *d.UsedBytes {
			t.Errorf("ephemeral storage %+v counts the persistent volumes (data uses %v)", e, d.UsedBytes)
		}
		t.Logf("summary volume entries: %+v", shapes)
	}
	if err := tr.cs.CoreV1().Pods(ns).Delete(ctx(t), "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.waitPodGone(ns, "db")
	tr.waitNothingMounted()
	r := tr.nodeReport(off)
	r.Objects = map[string]any{"volumeStatsCalls": calls}
	tr.writeReport("volume-stats", r, false)
}
