package devicemanager

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// BenchmarkAdmit500Pods admits 500 pods, one device each, on a node with
// 64 devices of one plugin (over its unix socket): the 64 most recent
// pods are active, so each admission frees the oldest pod's device first.
// Each admission makes one Allocate call and writes the checkpoint
// (fsync), as kubelet does.
func BenchmarkAdmit500Pods(b *testing.B) {
	h := newHarness(b, shortDir(b))
	ids := make([]string, 64)
	for i := range ids {
		ids[i] = fmt.Sprintf("dev-%02d", i)
	}
	h.plugin(b, res, "dongle.sock", devices(pluginapi.Healthy, ids...), &pluginapi.DevicePluginOptions{})
	pods := make([]*corev1.Pod, 500)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for i := range pods {
			pods[i] = podWith(fmt.Sprintf("u%d-%d", n, i), ctr("c", map[string]int64{res: 1}))
		}
		for i, p := range pods {
			lo := max(0, i-63)
			if err := h.m.Admit(ctx, p, pods[lo:i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pods)), "ns/pod")
}
