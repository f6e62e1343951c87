package statusmanager_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/statusmanager"
	"github.com/podstart/podstart/statusmanager/fake"
)

// A node agent passes m.OnSync to podworker.WithOnSync and runs m.Run;
// here the worker's states are handed over by hand, and Sync writes them
// at once.
func Example() {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "web-uid"}}
	client := fake.NewClient(pod) // or the agent's client-go clientset behind statusmanager.Client
	m := statusmanager.New(client)
	ctx := context.Background()

	running := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.88.0.3"}
	m.OnSync(pod.UID, podworker.PodState{Pod: pod, Status: &podsync.PodStatus{}, APIStatus: running})
	m.OnSync(pod.UID, podworker.PodState{Pod: pod, Status: &podsync.PodStatus{}, APIStatus: running}) // unchanged: not written again
	if err := m.Sync(ctx, false); err != nil {
		fmt.Println(err)
	}
	written, _ := m.Written(pod.UID)
	fmt.Println("written:", written.Phase, written.PodIP)

	// The pod is deleted gracefully; the worker kills and removes it.
	api, _ := client.Pod("default", "web")
	api.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	client.Put(api)
	final := corev1.PodStatus{Phase: corev1.PodSucceeded, PodIP: "10.88.0.3"}
	m.OnSync(pod.UID, podworker.PodState{Pod: pod, APIStatus: final, Terminating: true, Removed: true})
	if err := m.Sync(ctx, false); err != nil {
		fmt.Println(err)
	}
	for _, c := range client.Calls() {
		switch c.Verb {
		case fake.Patch:
			fmt.Println(c.Verb, string(c.Patch))
		case fake.Delete:
			fmt.Println(c.Verb, "with UID precondition", c.UID)
		default:
			fmt.Println(c.Verb)
		}
	}
	_, exists := client.Pod("default", "web")
	fmt.Println("object exists:", exists)
	// Output:
	// written: Running 10.88.0.3
	// get
	// patch {"metadata":{"uid":"web-uid"},"status":{"phase":"Running","podIP":"10.88.0.3"}}
	// get
	// patch {"metadata":{"uid":"web-uid"},"status":{"phase":"Succeeded"}}
	// delete with UID precondition web-uid
	// object exists: false
}
