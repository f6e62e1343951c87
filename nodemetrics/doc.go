// Package nodemetrics is what kubelet v1.37.2 reports about its node on
// /metrics, /metrics/probes and /metrics/cadvisor, with kubelet's names,
// types, help texts (stability marker first: "[ALPHA] ..."), label names
// and buckets, fed by podstart's hooks. Each endpoint is an http.Handler;
// nodeapi serves them behind the node API's authorization (nodes/metrics).
//
// It uses github.com/prometheus/client_golang, the library kubelet's
// registry (k8s.io/component-base/metrics) wraps: component-base would
// bring the stability annotations, but also klog, feature gates and
// version machinery that no library package here may import (layers_test
// forbids k8s.io/component-base); the annotation is a prefix of the help
// text, written here (Family.FullHelp) and compared with kubelet's
// registry by test/diff.
//
// # /metrics (Metrics)
//
//   - kubelet_node_name{node} 1.
//   - kubelet_pleg_relist_duration_seconds, _interval_seconds,
//     kubelet_pleg_last_seen_seconds, kubelet_running_pods and
//     kubelet_running_containers{container_state}: OnRelist, given to
//     podworker.WithOnRelist, from every relist over every pod the runtime
//     has (a READY sandbox is a running pod; containers counted by state:
//     created, running, exited, unknown), as kubelet's generic PLEG.
//   - kubelet_runtime_operations_total, _errors_total and
//     _duration_seconds{operation_type} and kubelet_run_podsandbox_duration_seconds
//     and _errors_total{runtime_handler}: UnaryClientInterceptor, given to
//     runtime.Dial, with kubelet's operation names.
//   - kubelet_started_pods_total, _errors_total, kubelet_started_containers_total{container_type}
//     and _errors_total{container_type,code}: OnSync (podworker.WithOnSync),
//     from the sync's results.
//   - kubelet_pod_start_duration_seconds: from Seen (the agent hands the
//     pod to its worker) to the first Running status (OnSync).
//   - kubelet_pod_start_sli_duration_seconds, _total_duration_seconds and
//     kubelet_first_network_pod_start_sli_duration_seconds: kubelet's pod
//     startup latency tracker: ObservedPodOnWatch (the agent's watch), the
//     image pulls seen by Recorder (podsync.WithRecorder), the moment OnSync
//     finds every container started.
//   - kubelet_image_garbage_collected_total{reason}: OnImageGC
//     (imagegc.WithOnPass).
//   - kubelet_evictions{eviction_signal}: EvictionKiller, around the
//     eviction manager's Killer.
//   - go_* and process_*: client_golang's Go and process collectors, as
//     kubelet's registry.
//
// # /metrics/probes (Probes)
//
// prober_probe_total{probe_type,result,container,pod,namespace,pod_uid}
// and prober_probe_duration_seconds{probe_type,container,pod,namespace}
// from probes.WithOnProbe, as kubelet's probe workers count them (an
// errored probe is no result; the duration of successful and unknown
// ones; a stopped worker's series deleted), and process_start_time_seconds.
//
// # /metrics/cadvisor (Cadvisor)
//
// From the stats Summary (stats.Provider: CRI stats and the pod cgroups)
// and CRI's lists, per pod cgroup and per running container whose cgroup
// is found (what cAdvisor would see), with kubelet's labels container, id
// (the cgroup's path), image, name (the container's ID), namespace and
// pod: container_cpu_usage_seconds_total{cpu="total"},
// container_memory_usage_bytes, _working_set_bytes, _rss, _swap,
// container_start_time_seconds, container_last_seen; per pod, under its
// sandbox container (WithSandboxImage), container_network_receive_bytes_total,
// _receive_errors_total, transmit_bytes_total, _transmit_errors_total;
// container_scrape_error. Samples carry the stats' timestamps, as cAdvisor's.
//
// # Not served (no value podstart could honestly give)
//
// /metrics: kubelet_pod_worker_duration_seconds and
// kubelet_pod_worker_start_duration_seconds (podworker reports the end of
// a sync, not its start), kubelet_image_pull_duration_seconds (the image
// size bucket is not known), kubelet_cgroup_manager_duration_seconds,
// kubelet_pod_status_sync_duration_seconds, kubelet_containers_per_pod_count,
// kubelet_pleg_discard_events and kubelet_pleg_pod_relist_duration_seconds,
// the evented PLEG's connection metrics, kubelet_eviction_stats_age_seconds,
// kubelet_preemptions, kubelet_desired_pods, _active_pods, _mirror_pods,
// _working_pods, kubelet_orphaned_runtime_pods_total, kubelet_restarted_pods_total,
// kubelet_managed_ephemeral_containers, kubelet_terminated_containers_total,
// the node startup durations, the device plugin, pod resources, CPU,
// memory and topology manager metrics, the volume stats, the user
// namespace and host process counters, kubelet_cgroup_version,
// kubelet_cri_losing_support, and the client-go, workqueue and
// apiserver-library metrics kubelet's registry also holds: the test/diff
// differential lists them all. /metrics/cadvisor: the machine_* series,
// cadvisor_version_info, the CPU split (user, system, CFS), memory cache,
// mapped file, failures and events, filesystem and disk I/O (the device
// is not known), network packets and drops (CRI reports none), processes,
// threads, file descriptors, OOM events, PSI, container_spec_*, and the
// cgroups above the pods (/, /kubepods, the QoS classes, system slices).
//
// # Differences from kubelet
//
//   - Gauges kubelet writes 0 before it knows (kubelet_running_pods before
//     the first relist, kubelet_pleg_last_seen_seconds,
//     kubelet_first_network_pod_start_sli_duration_seconds before the first
//     pod) are absent until known.
//   - The start tracker's "all containers started" moment is the end of
//     the sync that computed that status, not the status manager's write;
//     init containers' run time is read from their terminated states
//     (second resolution).
//   - Runtime calls are counted at the gRPC client: a runtime given
//     in-process is counted only through RuntimeOperation.
//   - A container's image label is the image the container was asked for
//     (CRI's user-specified image), which is what containerd records for
//     cAdvisor.
package nodemetrics
