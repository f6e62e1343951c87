// Package csi is the CSI tier: a real control plane, a real CSI stack
// (external-provisioner, external-attacher, the tier's bind-mount driver
// and registrar, all processes) and one node, the real kubelet v1.37.2 or
// podstart's examples/nodeagent, on containerd 2.x. run.sh brings it up
// and runs this package's test, which drives a StatefulSet with a
// volumeClaimTemplate, a generic ephemeral volume and a CSI inline volume
// through it, checks the data survives the pods, that nothing stays
// mounted under the node's root dir, and writes the node's CSI calls,
// paths and names normalised, for comparing one node with the other.
//
// Without the tier's environment (PODSTART_CSI_KUBECONFIG and friends,
// written by run.sh to /tmp/podstart-csi/env) the test skips, unless
// PODSTART_CSI_REQUIRED=1, when it fails. See README.md.
package csi
