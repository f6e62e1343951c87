package podsync

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rr(cpuReq, cpuLim, memReq, memLim string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{}
	put := func(l *corev1.ResourceList, name corev1.ResourceName, v string) {
		if v == "" {
			return
		}
		if *l == nil {
			*l = corev1.ResourceList{}
		}
		(*l)[name] = resource.MustParse(v)
	}
	put(&r.Requests, corev1.ResourceCPU, cpuReq)
	put(&r.Limits, corev1.ResourceCPU, cpuLim)
	put(&r.Requests, corev1.ResourceMemory, memReq)
	put(&r.Limits, corev1.ResourceMemory, memLim)
	return r
}

// rv is rr as the values a resize compares.
func rv(cpuReq, cpuLim, memReq, memLim string) ResourceValues {
	r := rr(cpuReq, cpuLim, memReq, memLim)
	return ResourceValuesOf(nil, &r)
}

// update names the containers queued for one resource, in order.
func updates(a Actions, name corev1.ResourceName) []string {
	var out []string
	for _, u := range a.ContainersToUpdate[name] {
		out = append(out, u.Name)
	}
	return out
}

// The rules of kubelet's computePodResizeAction
// (TestComputePodActionsForPodResize in kuberuntime_manager_test.go):
// a changed resource is updated in place unless its resize policy says
// RestartContainer; decreases go before increases; only running
// containers are resized; a missing record counts as zero; a limit the
// container does not set follows the pod-level limit.
func TestComputePodActionsResize(t *testing.T) {
	restartMem := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	restartCPU := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
	tests := []struct {
		name      string
		mutate    func(p *corev1.Pod, st *PodStatus)
		cpu, mem  []string // containers updated in place, in order
		kill      []string // containers killed for a restart
		start     []int
		startInit []int
		update    bool // UpdatePodResources
	}{
		{name: "nothing changed", mutate: func(p *corev1.Pod, st *PodStatus) {}},
		{name: "no records: nothing computed", mutate: func(p *corev1.Pod, st *PodStatus) {
			p.Spec.Containers[0].Resources = rr("200m", "", "", "")
			st.ActuatedResources = nil
		}},
		{name: "cpu raised in place", mutate: func(p *corev1.Pod, st *PodStatus) {
			p.Spec.Containers[0].Resources = rr("200m", "400m", "100Mi", "200Mi")
		}, cpu: []string{"foo1"}},
		{name: "memory limit raised in place; the request change rides along", mutate: func(p *corev1.Pod, st *PodStatus) {
			p.Spec.Containers[1].Resources = rr("100m", "200m", "200Mi", "400Mi")
		}, mem: []string{"foo2"}},
		{name: "decreases before increases", mutate: func(p *corev1.Pod, st *PodStatus) {
			p.Spec.Containers[0].Resources = rr("100m", "300m", "100Mi", "200Mi") // cpu limit up
			p.Spec.Containers[1].Resources = rr("100m", "100m", "100Mi", "100Mi") // cpu and memory limits down
			p.Spec.Containers[2].Resources = rr("100m", "250m", "100Mi", "200Mi") // cpu limit up
		}, cpu: []string{"foo2", "foo1", "foo3"}, mem: []string{"foo2"}},
		{name: "RestartContainer on memory restarts for a memory change", mutate: func(p *corev1.Pod, st *PodStatus) {
			p.Spec.Containers[2].ResizePolicy = restartMem
			p.Spec.Containers[2].Resources = rr("100m", "200m", "100Mi", "300Mi")
		}, kill: []string{"foo3"}, start: []int{2}, update: true},
		{name: "RestartContainer on memory: a CPU change is still in place", mutate: func(p *corev1.Pod, st *PodStatus) {
			p.Spec.Containers[2].ResizePolicy = restartMem
			p.Spec.Containers[2].Resources = rr("300m", "300m", "100Mi", "200Mi")
		}, cpu: []string{"foo3"}},
		{name: "RestartContainer on cpu with both changed restarts", mutate: func(p *corev1.Pod, st *PodStatus) {
			p.Spec.Containers[0].ResizePolicy = restartCPU
			p.Spec.Containers[0].Resources = rr("300m", "300m", "100Mi", "300Mi")
		}, kill: []string{"foo1"}, start: []int{0}, update: true},
		{name: "an exited container is not resized", mutate: func(p *corev1.Pod, st *PodStatus) {
			p.Spec.Containers[0].Resources = rr("300m", "300m", "", "")
			st.ContainerStatuses[0].State = ContainerStateExited
		}, start: []int{0}},
		{name: "a missing record counts as zero", mutate: func(p *corev1.Pod, st *PodStatus) {
			delete(st.ActuatedResources, "foo2")
		}, cpu: []string{"foo2"}, mem: []string{"foo2"}},
		{name: "pod-level limit followed by a container without its own", mutate: func(p *corev1.Pod, st *PodStatus) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
			p.Spec.Containers[0].Resources = rr("100m", "", "100Mi", "200Mi")
			st.ActuatedResources["foo1"] = rv("100m", "500m", "100Mi", "200Mi")
		}, cpu: []string{"foo1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := basePod()
			st := statusOf(ready(), running("foo1"), running("foo2"), running("foo3"))
			st.ActuatedResources = map[string]ResourceValues{}
			for i := range pod.Spec.Containers {
				pod.Spec.Containers[i].Resources = rr("100m", "200m", "100Mi", "200Mi")
				st.ActuatedResources[pod.Spec.Containers[i].Name] = rv("100m", "200m", "100Mi", "200Mi")
			}
			tt.mutate(pod, st)
			a := ComputePodActions(pod, st, nil)
			if got := updates(a, corev1.ResourceCPU); !reflect.DeepEqual(got, tt.cpu) {
				t.Errorf("cpu updates %v, want %v", got, tt.cpu)
			}
			if got := updates(a, corev1.ResourceMemory); !reflect.DeepEqual(got, tt.mem) {
				t.Errorf("memory updates %v, want %v", got, tt.mem)
			}
			var killed []string
			for _, k := range a.ContainersToKill {
				killed = append(killed, k.Name)
				if want := "Container " + k.Name + " resize requires restart"; k.Message != want {
					t.Errorf("kill message %q, want %q", k.Message, want)
				}
			}
			if !reflect.DeepEqual(killed, tt.kill) {
				t.Errorf("killed %v, want %v", killed, tt.kill)
			}
			if want := append([]int{}, tt.start...); !reflect.DeepEqual(a.ContainersToStart, want) {
				t.Errorf("start %v, want %v", a.ContainersToStart, want)
			}
			if a.UpdatePodResources != tt.update {
				t.Errorf("UpdatePodResources %v, want %v", a.UpdatePodResources, tt.update)
			}
			if a.KillPod {
				t.Errorf("pod killed: %s", a.KillPodReason)
			}
			if got := ResizeInProgress(pod, st); got != (len(tt.cpu)+len(tt.mem)+len(tt.kill) > 0) {
				t.Errorf("ResizeInProgress %v with actions %s", got, a)
			}
		})
	}
}

// Sidecars restart or update in place by the same rules; a running
// regular init container is updated in place
// (InPlacePodVerticalScalingInitContainers, on in v1.36).
func TestComputePodActionsResizeInitContainers(t *testing.T) {
	t.Run("sidecar restart", func(t *testing.T) {
		pod := initPod(true)
		pod.Spec.InitContainers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
		pod.Spec.InitContainers[0].Resources = rr("200m", "", "", "")
		st := statusOf(ready(), running("init1"), running("foo1"), running("foo2"))
		st.ActuatedResources = map[string]ResourceValues{"init1": rv("100m", "", "", "")}
		a := ComputePodActions(pod, st, nil)
		if k, ok := a.ContainersToKill["id-init1"]; !ok || k.Message != "Container init1 resize requires restart" {
			t.Fatalf("kill %+v", a.ContainersToKill)
		}
		if !reflect.DeepEqual(a.InitContainersToStart, []int{0}) {
			t.Fatalf("init to start %v", a.InitContainersToStart)
		}
	})
	t.Run("sidecar in place", func(t *testing.T) {
		pod := initPod(true)
		pod.Spec.InitContainers[0].Resources = rr("200m", "", "", "")
		st := statusOf(ready(), running("init1"), running("foo1"), running("foo2"))
		st.ActuatedResources = map[string]ResourceValues{"init1": rv("100m", "", "", "")}
		a := ComputePodActions(pod, st, nil)
		if got := updates(a, corev1.ResourceCPU); !reflect.DeepEqual(got, []string{"init1"}) || len(a.ContainersToKill) > 0 {
			t.Fatalf("cpu updates %v, kills %v", got, a.ContainersToKill)
		}
	})
	t.Run("running init container in place", func(t *testing.T) {
		pod := initPod(false)
		pod.Spec.InitContainers[0].Resources = rr("", "", "", "300Mi")
		st := statusOf(ready(), running("init1"))
		st.ActuatedResources = map[string]ResourceValues{"init1": rv("", "", "", "200Mi")}
		a := ComputePodActions(pod, st, nil)
		if got := updates(a, corev1.ResourceMemory); !reflect.DeepEqual(got, []string{"init1"}) {
			t.Fatalf("memory updates %v", got)
		}
	})
}

func BenchmarkComputePodActionsResize(b *testing.B) {
	pod := initPod(false, false, false, true, true)
	for i := 0; i < 8; i++ {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "app" + string(rune('a'+i)), Image: "busybox"})
	}
	st := statusOf(ready())
	st.ActuatedResources = map[string]ResourceValues{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st.ContainerStatuses = append(st.ContainerStatuses, exited(c.Name, 0))
		if c.RestartPolicy != nil {
			st.ContainerStatuses[len(st.ContainerStatuses)-1] = running(c.Name)
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		c.Resources = rr("200m", "400m", "100Mi", "200Mi")
		st.ActuatedResources[c.Name] = rv("100m", "400m", "100Mi", "200Mi")
		st.ContainerStatuses = append(st.ContainerStatuses, running(c.Name))
	}
	b.ReportAllocs()
	for b.Loop() {
		a := ComputePodActions(pod, st, nil)
		if len(a.ContainersToUpdate[corev1.ResourceCPU]) != len(pod.Spec.Containers) {
			b.Fatal(a.String())
		}
	}
}
