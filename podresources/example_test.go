package podresources_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/podstart/podstart/podresources"
)

type activePods []*corev1.Pod

func (p activePods) ActivePods() []*corev1.Pod { return p }
func (p activePods) PodByName(ns, name string) (*corev1.Pod, bool) {
	for _, x := range p {
		if x.Namespace == ns && x.Name == name {
			return x, true
		}
	}
	return nil, false
}

// A Server over the node's pods; a node agent passes its
// devicemanager.Manager with WithDevices and serves it with Serve on
// <root-dir>/pod-resources/kubelet.sock.
func ExampleNew() {
	pods := activePods{{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx"}}}}}
	srv, err := podresources.New(pods)
	if err != nil {
		panic(err)
	}
	resp, _ := srv.List(context.Background(), &podresourcesv1.ListPodResourcesRequest{})
	for _, p := range resp.PodResources {
		fmt.Println(p.Namespace, p.Name, len(p.Containers))
	}
	// Output: default web 1
}
