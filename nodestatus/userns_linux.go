package nodestatus

// RunningInUserNamespace is what kubelet v1.37.2 reports as the node's
// nodeInfo.runningInUserNamespace (KubeletInUserNamespace, on by default
// since v1.37): on Linux, whether this process runs in a user namespace,
// read from /proc/self/uid_map as moby/sys/userns does (a rootless or
// nested node agent says true); on other systems nil, not reported.
func RunningInUserNamespace() *bool {
	in := inUserNamespace("/proc/self/uid_map")
	return &in
}
