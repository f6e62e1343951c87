//go:build !linux

package nodestatus

// RunningInUserNamespace is what kubelet v1.37.2 reports as the node's
// nodeInfo.runningInUserNamespace: on Linux whether this process runs in a
// user namespace; on other systems, as here, nil (not reported).
func RunningInUserNamespace() *bool { return nil }
