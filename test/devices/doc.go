// Package devices is the device plugin tier: Kubernetes' own sample device
// plugin (k8s.io/kubernetes/test/images/sample-device-plugin v1.37.2, the
// one its e2e suite uses, built from the module) registers with a
// devicemanager.Manager, and pods asking for its resource
// (example.com/resource) run on containerd 2.x through podsync with the
// plugin's mount.
//
// run.sh brings up test/e2e/env.sh (containerd 2, its own directory and
// ports), builds the plugin and runs the test with
// PODSTART_DEVICES_REQUIRED=1. Without it the test skips, so CI's
// "go test ./..." passes over it.
//
// The sample plugin dials kubelet's fixed /var/lib/kubelet/device-plugins
// /kubelet.sock. Every kubelet on the host owns that directory, so the
// test never touches it: the plugin runs in a mount namespace of its own
// (unshare) where the tier's directory is bind-mounted over it.
package devices
