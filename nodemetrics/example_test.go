package nodemetrics_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"

	"github.com/podstart/podstart/imagegc"
	"github.com/podstart/podstart/nodemetrics"
)

// A node's /metrics: kubelet's families, fed by the hooks the agent wires
// (podworker.WithOnSync(m.OnSync), podworker.WithOnRelist(m.OnRelist),
// imagegc.WithOnPass(m.OnImageGC), runtime.Dial with
// m.UnaryClientInterceptor(), ...).
func Example() {
	m, err := nodemetrics.New("node-a")
	if err != nil {
		panic(err)
	}
	m.OnImageGC(imagegc.Pass{Removed: []imagegc.RemovedImage{{ID: "sha256:0123", Reason: imagegc.ReasonSpace}}})

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.Contains(line, "kubelet_image_garbage_collected_total") || strings.Contains(line, "kubelet_node_name") {
			fmt.Println(line)
		}
	}
	// Output:
	// # HELP kubelet_image_garbage_collected_total [ALPHA] Total number of images garbage collected by the kubelet, whether through disk usage or image age.
	// # TYPE kubelet_image_garbage_collected_total counter
	// kubelet_image_garbage_collected_total{reason="space"} 1
	// # HELP kubelet_node_name [ALPHA] The node's name. The count is always 1.
	// # TYPE kubelet_node_name gauge
	// kubelet_node_name{node="node-a"} 1
}
