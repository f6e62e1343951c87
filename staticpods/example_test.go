package staticpods_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/podstart/podstart/staticpods"
)

// A node agent runs a FileSource (kubelet's staticPodPath) and hands each
// Update to its pod workers: OpAdd and OpUpdate to Upsert, OpRemove to
// Delete; Mirrors keeps the mirror pods in the API server.
func Example() {
	dir, _ := os.MkdirTemp("", "manifests")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "etcd.yaml"), []byte(`apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  containers:
  - name: etcd
    image: registry.k8s.io/etcd:3.6.5-0
`), 0o644)

	src, err := staticpods.NewFileSource(dir, "node-1",
		staticpods.WithOnRefused(func(r staticpods.Refusal) { fmt.Println("refused:", r) }))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	updates := make(chan staticpods.Update)
	go src.Run(ctx, updates)

	u := <-updates
	pod := u.Pods[0]
	fmt.Println(u.Op, u.Source, pod.Namespace+"/"+pod.Name, pod.Spec.NodeName)
	fmt.Println("static:", staticpods.IsStaticPod(pod), "critical:", staticpods.IsCriticalPod(pod))
	fmt.Println("UID is the config hash:", string(pod.UID) == pod.Annotations[staticpods.ConfigHashAnnotation])
	// Output:
	// ADD file kube-system/etcd-node-1 node-1
	// static: true critical: true
	// UID is the config hash: true
}
