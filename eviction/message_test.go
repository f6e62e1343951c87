package eviction

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func restartable(c corev1.Container) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

// Ported from kubelet's TestEvictionMessage.
func TestMessage(t *testing.T) {
	t.Parallel()
	type use struct{ name, usage string }
	tests := []struct {
		name        string
		podRequests corev1.ResourceList
		podUsage    string
		init        []corev1.Container
		containers  []corev1.Container
		ephemeral   []corev1.EphemeralContainer
		usage       []use
		wantMessage string
		wantAnn     map[string]string
	}{
		{
			name:        "no container exceeds memory usage",
			init:        []corev1.Container{container("init1", resources("", "100Mi", ""), nil), restartable(container("restartable-init1", resources("", "200Mi", ""), nil))},
			containers:  []corev1.Container{container("regular1", resources("", "200Mi", ""), nil)},
			usage:       []use{{"restartable-init1", "150Mi"}, {"regular1", "100Mi"}},
			wantMessage: "The node was low on resource: memory. ",
			wantAnn:     map[string]string{OffendingContainersKey: "", OffendingContainersUsageKey: "", StarvedResourceKey: "memory"},
		},
		{
			name:        "init container exceeds memory usage",
			init:        []corev1.Container{container("init1", resources("", "100Mi", ""), nil), container("init2", resources("", "150Mi", ""), nil)},
			containers:  []corev1.Container{container("regular1", resources("", "200Mi", ""), nil)},
			usage:       []use{{"init1", "150Mi"}},
			wantMessage: "The node was low on resource: memory. Container init1 was using 150Mi, request is 100Mi, has larger consumption of memory. ",
			wantAnn:     map[string]string{OffendingContainersKey: "init1", OffendingContainersUsageKey: "150Mi", StarvedResourceKey: "memory"},
		},
		{
			name:       "ephemeral containers are never blamed",
			init:       []corev1.Container{restartable(container("restartable-init1", resources("", "200Mi", ""), nil))},
			containers: []corev1.Container{container("regular1", resources("", "200Mi", ""), nil)},
			ephemeral: []corev1.EphemeralContainer{{TargetContainerName: "regular1",
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "ephemeral1"}}},
			usage:       []use{{"restartable-init1", "200Mi"}, {"regular1", "150Mi"}, {"ephemeral1", "250Mi"}},
			wantMessage: "The node was low on resource: memory. ",
			wantAnn:     map[string]string{OffendingContainersKey: "", OffendingContainersUsageKey: "", StarvedResourceKey: "memory"},
		},
		{
			name:       "containers without requests exceed them",
			init:       []corev1.Container{restartable(container("restartable-init1", nil, nil)), restartable(container("restartable-init2", resources("", "300Mi", ""), nil))},
			containers: []corev1.Container{container("regular1", nil, nil)},
			usage:      []use{{"restartable-init1", "250Mi"}, {"restartable-init2", "250Mi"}, {"regular1", "200Mi"}},
			wantMessage: "The node was low on resource: memory. " +
				"Container restartable-init1 was using 250Mi, request is 0, has larger consumption of memory. " +
				"Container regular1 was using 200Mi, request is 0, has larger consumption of memory. ",
			wantAnn: map[string]string{OffendingContainersKey: "restartable-init1,regular1", OffendingContainersUsageKey: "250Mi,200Mi", StarvedResourceKey: "memory"},
		},
		{
			name:        "pod-level resources",
			podRequests: resources("", "250Mi", ""),
			podUsage:    "600Mi",
			containers:  []corev1.Container{container("regular1", nil, nil), container("regular2", nil, nil)},
			usage:       []use{{"regular1", "250Mi"}, {"regular2", "350Mi"}},
			wantMessage: "The node was low on resource: memory. " +
				"Pod pod-eviction-message was using 600Mi, request is 250Mi, has larger consumption of memory. " +
				"Container regular1 was using 250Mi, request is 0, has larger consumption of memory. " +
				"Container regular2 was using 350Mi, request is 0, has larger consumption of memory. ",
			wantAnn: map[string]string{
				OffendingPodKey: "pod-eviction-message", OffendingPodUsageKey: "600Mi",
				OffendingContainersKey: "regular1,regular2", OffendingContainersUsageKey: "250Mi,350Mi", StarvedResourceKey: "memory",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pod := newPod("pod-eviction-message", 1, tt.containers, nil)
			pod.Spec.InitContainers = tt.init
			pod.Spec.EphemeralContainers = tt.ephemeral
			if tt.podRequests != nil {
				pod.Spec.Resources = &corev1.ResourceRequirements{Requests: tt.podRequests}
			}
			podUsage := "1Mi"
			if tt.podUsage != "" {
				podUsage = tt.podUsage
			}
			s := statsapi.PodStats{PodRef: podRef(pod), Memory: &statsapi.MemoryStats{WorkingSetBytes: u64(uint64(qp(podUsage).Value()))}}
			for _, u := range tt.usage {
				s.Containers = append(s.Containers, statsapi.ContainerStats{Name: u.name, Memory: &statsapi.MemoryStats{WorkingSetBytes: u64(uint64(qp(u.usage).Value()))}})
			}
			msg, ann := Message(corev1.ResourceMemory, pod, PodStatsByUID([]statsapi.PodStats{s}), nil, nil)
			if msg != tt.wantMessage {
				t.Errorf("message\n%q, want\n%q", msg, tt.wantMessage)
			}
			if diff := cmp.Diff(tt.wantAnn, ann); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMessageThresholdAndDisk(t *testing.T) {
	t.Parallel()
	pod, s := diskPod("filler", 0, resources("", "", "100Mi"), nil, "300Mi", "50Mi", "0", nil)
	obs := Observe(diskSummary("1Gi", "8Gi"))
	ths := []Threshold{{Signal: SignalNodeFsAvailable, Value: ThresholdValue{Percentage: 0.6}}}
	msg, ann := Message(corev1.ResourceEphemeralStorage, pod, PodStatsByUID([]statsapi.PodStats{s}), ths, obs)
	want := "The node was low on resource: ephemeral-storage. Threshold quantity: 1288490240, available: 1Gi. " +
		"Container filler was using 350Mi, request is 100Mi, has larger consumption of ephemeral-storage. "
	if msg != want {
		t.Errorf("message\n%q, want\n%q", msg, want)
	}
	if ann[StarvedResourceKey] != "ephemeral-storage" || ann[OffendingContainersKey] != "filler" {
		t.Errorf("annotations %v", ann)
	}
	// no stats: the node's part only, no annotations
	msg, ann = Message(corev1.ResourceEphemeralStorage, pod, PodStatsByUID(nil), ths, obs)
	if msg != "The node was low on resource: ephemeral-storage. Threshold quantity: 1288490240, available: 1Gi. " || len(ann) != 0 {
		t.Errorf("without stats: %q %v", msg, ann)
	}
}

func TestEvictedStatus(t *testing.T) {
	t.Parallel()
	pod := newPod("p", 0, nil, nil)
	pod.Generation = 3
	now := metav1.NewTime(time.Unix(1000, 0))
	st := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	EvictedStatus(&st, pod, "msg", true, now)
	want := corev1.PodStatus{
		Phase: corev1.PodFailed, Reason: "Evicted", Message: "msg",
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet", Message: "msg", ObservedGeneration: 3, LastTransitionTime: now},
		},
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if !IsEvicted(st) {
		t.Error("IsEvicted false")
	}
	// again later: the condition keeps its transition time
	EvictedStatus(&st, pod, "msg2", true, metav1.NewTime(time.Unix(2000, 0)))
	if c := st.Conditions[1]; c.LastTransitionTime != now || c.Message != "msg2" || len(st.Conditions) != 2 {
		t.Errorf("condition updated to %+v", c)
	}
	// a storage-limit eviction has no condition
	st = corev1.PodStatus{}
	EvictedStatus(&st, pod, "over", false, now)
	if st.Conditions != nil || st.Reason != Reason {
		t.Errorf("storage eviction status %+v", st)
	}
}

// Ported from kubelet's TestAdmitUnderNodeConditions, with critical pods
// and tolerations.
func TestAdmit(t *testing.T) {
	t.Parallel()
	both := resources("100m", "1Gi", "")
	guaranteed := newPod("guaranteed", 0, []corev1.Container{container("c", both, both)}, nil)
	burstable := newPod("burstable", 0, []corev1.Container{container("c", both, nil)}, nil)
	bestEffort := newPod("best-effort", 0, []corev1.Container{container("c", nil, nil)}, nil)
	tolerating := bestEffort.DeepCopy()
	tolerating.Name = "tolerating"
	tolerating.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	static := bestEffort.DeepCopy()
	static.Name = "static"
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	critical := bestEffort.DeepCopy()
	critical.Name = "critical"
	prio := int32(SystemCriticalPriority)
	critical.Spec.Priority = &prio
	pods := []*corev1.Pod{guaranteed, burstable, bestEffort, tolerating, static, critical}
	for _, tt := range []struct {
		conditions []corev1.NodeConditionType
		admitted   []bool
	}{
		{nil, []bool{true, true, true, true, true, true}},
		{[]corev1.NodeConditionType{corev1.NodeMemoryPressure}, []bool{true, true, false, true, true, true}},
		{[]corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure}, []bool{false, false, false, false, true, true}},
		{[]corev1.NodeConditionType{corev1.NodePIDPressure}, []bool{false, false, false, false, true, true}},
	} {
		for i, pod := range pods {
			err := Admit(pod, tt.conditions)
			if (err == nil) != tt.admitted[i] {
				t.Errorf("%s under %v: %v, want admitted %v", pod.Name, tt.conditions, err, tt.admitted[i])
			}
			if err == nil {
				continue
			}
			var ae *AdmitError
			if !errors.As(err, &ae) || !errors.Is(err, ErrNodePressure) || ae.Reason() != "Evicted" {
				t.Errorf("error %v is not an AdmitError matching ErrNodePressure", err)
			}
		}
	}
	err := Admit(bestEffort, []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure})
	if want := "The node had condition: [MemoryPressure DiskPressure]. "; err.Error() != want {
		t.Errorf("message %q, want kubelet's %q", err.Error(), want)
	}
}

func TestStorageLimitExceeded(t *testing.T) {
	t.Parallel()
	size := resource.MustParse("100Mi")
	withEmptyDir := newPod("empty-dir", 0, []corev1.Container{container("c", nil, nil)},
		[]corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &size}}}})
	withLimit := newPod("limited", 0, []corev1.Container{container("c", nil, resources("", "", "200Mi"))}, nil)
	sidecar := newPod("sidecar", 0, []corev1.Container{container("c", nil, nil)}, nil)
	sidecar.Spec.InitContainers = []corev1.Container{restartable(container("side", nil, resources("", "", "10Mi")))}
	fs := func(mi uint64) *statsapi.FsStats { return &statsapi.FsStats{UsedBytes: u64(mi << 20)} }
	tests := []struct {
		name   string
		pod    *corev1.Pod
		stats  statsapi.PodStats
		layout DiskLayout
		want   string
	}{
		{name: "emptyDir over its size", pod: withEmptyDir, stats: statsapi.PodStats{VolumeStats: []statsapi.VolumeStats{{Name: "scratch", FsStats: *fs(101)}}},
			want: `Usage of EmptyDir volume "scratch" exceeds the limit "100Mi". `},
		{name: "emptyDir at its size", pod: withEmptyDir, stats: statsapi.PodStats{VolumeStats: []statsapi.VolumeStats{{Name: "scratch", FsStats: *fs(100)}}}},
		{name: "pod over its total", pod: withLimit, stats: statsapi.PodStats{EphemeralStorage: fs(201)},
			want: "Pod ephemeral local storage usage exceeds the total limit of containers 200Mi. "},
		{name: "container over its limit", pod: withLimit, stats: statsapi.PodStats{Containers: []statsapi.ContainerStats{{Name: "c", Rootfs: fs(150), Logs: fs(60)}}},
			want: `Container c exceeded its local ephemeral storage limit "200Mi". `},
		{name: "rootfs not counted with an image filesystem", pod: withLimit, layout: DiskLayout{DedicatedImageFs: true},
			stats: statsapi.PodStats{Containers: []statsapi.ContainerStats{{Name: "c", Rootfs: fs(150), Logs: fs(60)}}}},
		{name: "restartable init container", pod: sidecar, stats: statsapi.PodStats{Containers: []statsapi.ContainerStats{{Name: "side", Logs: fs(11)}}},
			want: `Container side exceeded its local ephemeral storage limit "10Mi". `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg, over := StorageLimitExceeded(tt.pod, tt.stats, tt.layout)
			if over != (tt.want != "") || msg != tt.want {
				t.Errorf("got %q %v, want %q", msg, over, tt.want)
			}
		})
	}
}
