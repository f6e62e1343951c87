//go:build tools

// Package clusterbuild names the binaries test/cluster/build.sh builds:
// kube-apiserver and kubectl from k8s.io/kubernetes v1.37.2 and etcd from
// the go.etcd.io/etcd/server/v3 version that k8s.io/kubernetes pins.
package clusterbuild

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
