package nodemetrics

import (
	"context"
	"strings"
	"unicode"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// operations are kubelet's operation_type names of the CRI calls
// (kuberuntime's instrumented services), by gRPC method name.
var operations = map[string]string{
	"Version": "version", "Status": "status", "RuntimeConfig": "runtime_config",
	"UpdateRuntimeConfig": "update_runtime_config",
	"CreateContainer":     "create_container", "StartContainer": "start_container", "StopContainer": "stop_container",
	"RemoveContainer": "remove_container", "ListContainers": "list_containers", "ContainerStatus": "container_status",
	"UpdateContainerResources": "update_container", "ReopenContainerLog": "reopen_container_log",
	"ExecSync": "exec_sync", "Exec": "exec", "Attach": "attach", "PortForward": "port_forward",
	"RunPodSandbox": "run_podsandbox", "StopPodSandbox": "stop_podsandbox", "RemovePodSandbox": "remove_podsandbox",
	"PodSandboxStatus": "podsandbox_status", "ListPodSandbox": "list_podsandbox",
	"ContainerStats": "container_stats", "ListContainerStats": "list_container_stats",
	"PodSandboxStats": "podsandbox_stats", "ListPodSandboxStats": "list_podsandbox_stats",
	"UpdatePodSandboxResources": "update_podsandbox_resources",
	"ListImages":                "list_images", "ImageStatus": "image_status", "PullImage": "pull_image",
	"RemoveImage": "remove_image", "ImageFsInfo": "image_fs_info",
	"CheckpointContainer": "checkpoint_container", "GetContainerEvents": "get_container_events",
	"ListMetricDescriptors": "list_metric_descriptors", "ListPodSandboxMetrics": "list_podsandbox_metrics",
}

// operation is kubelet's name of the gRPC method (the last element of
// "/runtime.v1.RuntimeService/ListPodSandbox"); a method kubelet does not
// instrument gets its name in snake case.
func operation(fullMethod string) string {
	name := fullMethod[strings.LastIndex(fullMethod, "/")+1:]
	if op, ok := operations[name]; ok {
		return op
	}
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// UnaryClientInterceptor counts the CRI calls made through a gRPC client
// (runtime.Dial with runtime.WithDialOptions(grpc.WithChainUnaryInterceptor(...))),
// as kubelet's instrumented runtime and image services count them:
// kubelet_runtime_operations_total, _duration_seconds and _errors_total by
// operation_type, and for RunPodSandbox kubelet_run_podsandbox_duration_seconds
// and _errors_total by the request's runtime handler. Streams (the
// container events, which kubelet's default configuration never asks
// for) are not counted.
func (m *Metrics) UnaryClientInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := m.clock.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		m.RuntimeOperation(operation(method), m.clock.Since(start).Seconds(), err)
		if r, ok := req.(*runtimeapi.RunPodSandboxRequest); ok {
			handler := r.GetRuntimeHandler()
			m.runSandboxDuration.WithLabelValues(handler).Observe(m.clock.Since(start).Seconds())
			if err != nil {
				m.runSandboxErrors.WithLabelValues(handler).Inc()
			}
		}
		return err
	}
}

// RuntimeOperation counts one runtime call that took seconds, for a
// runtime reached another way than through UnaryClientInterceptor (op is
// kubelet's operation_type, e.g. "list_podsandbox").
func (m *Metrics) RuntimeOperation(op string, seconds float64, err error) {
	m.runtimeOps.WithLabelValues(op).Inc()
	m.runtimeOpsDuration.WithLabelValues(op).Observe(seconds)
	if err != nil {
		m.runtimeOpsErrors.WithLabelValues(op).Inc()
	}
}
