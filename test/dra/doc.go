// Package dratier is the DRA tier: Kubernetes' own DRA test driver
// (k8s.io/kubernetes/test/e2e/dra/test-driver v1.37.2, built from the
// module in ./build) runs as a process against a real control plane
// (kube-apiserver, kube-controller-manager with the resource claim
// controller, kube-scheduler, v1.37.2, default configuration) and
// registers its kubelet plugin through <root-dir>/plugins_registry of one
// node on containerd 2.x, whose CDI cache reads the driver's spec
// directory. Pods with a ResourceClaimTemplate and with a ResourceClaim
// are scheduled to the node, prepared (NodePrepareResources), run with the
// CDI device's environment, and unprepared after delete.
//
// run.sh brings it all up, first with examples/nodeagent as the node, then
// with kubelet v1.37.2 under the same name on the same API server (a root
// dir of its own, the driver started again for it), and runs the tests
// once per node with PODSTART_DRA_REQUIRED=1; each run writes a masked
// report (the driver's calls, the containers' CDI devices and env, the
// pods' statuses) that TestCompare (PODSTART_DRA_COMPARE=1) diffs. Without
// those variables every test skips, so CI's "go test ./..." passes over
// them.
package dratier
