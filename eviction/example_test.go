package eviction_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podstart/podstart/eviction"
)

type summary struct{ s *statsapi.Summary }

func (s summary) Summary(context.Context) (*statsapi.Summary, error) { return s.s, nil }

type podWorker struct{ pods []*corev1.Pod }

func (w podWorker) ActivePods() []*corev1.Pod { return w.pods }

func (w podWorker) Evict(_ context.Context, e eviction.Eviction) error {
	var status corev1.PodStatus
	e.Status(&status, metav1.Now())
	fmt.Printf("evict %s (grace %ds): %s %s\n%q\n", e.Pod.Name, e.GracePeriodSeconds, status.Phase, status.Reason, status.Message)
	return nil
}

func u64(v uint64) *uint64 { return &v }

// A node with 50Mi of memory available, under kubelet's default
// memory.available<100Mi: the BestEffort pod using the most memory goes,
// and BestEffort pods are refused until the pressure ends.
func Example() {
	hog := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hog", UID: "1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	small := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "small", UID: "2"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")}}}}}}
	mem := func(uid, name string, ws uint64) statsapi.PodStats {
		return statsapi.PodStats{PodRef: statsapi.PodReference{Name: name, UID: uid},
			Memory:     &statsapi.MemoryStats{WorkingSetBytes: u64(ws)},
			Containers: []statsapi.ContainerStats{{Name: "c", Memory: &statsapi.MemoryStats{WorkingSetBytes: u64(ws)}}}}
	}
	node := &statsapi.Summary{
		Node: statsapi.NodeStats{Memory: &statsapi.MemoryStats{AvailableBytes: u64(50 << 20), WorkingSetBytes: u64(2 << 30)}},
		Pods: []statsapi.PodStats{mem("1", "hog", 600<<20), mem("2", "small", 50<<20)},
	}

	m := eviction.New(summary{node}, podWorker{[]*corev1.Pod{small, hog}})
	if _, err := m.Synchronize(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println(m.Conditions())
	fmt.Printf("%q\n", m.Admit(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new"}}))
	// Output:
	// evict hog (grace 1s): Failed Evicted
	// "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 600Mi, request is 0, has larger consumption of memory. "
	// [MemoryPressure]
	// "The node had condition: [MemoryPressure]. "
}
