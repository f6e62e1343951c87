package main

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/volumemanager"
)

// TraceEvent is one moment of a pod's life in the agent, reported to
// Config.Trace: where its start spends its time, from the watch to the
// status write.
type TraceEvent struct {
	Pod  types.UID
	Name string // the pod's namespace/name
	// Stage is one of:
	//   - "watch": the informer handed the agent the pod (every add and
	//     update);
	//   - "admitted": the pod passed admission and its worker has it
	//     (podworker Upsert returned);
	//   - "volumes": podsync set up the pod's volumes (at its first
	//     container's config in a sync), Took: how long it took;
	//   - "sync": a sync of the pod begins (its pull secrets are read,
	//     right before the cgroup and podsync's SyncPod);
	//   - "synced": a sync ended and its status reached the status
	//     manager (podworker's OnSync); Ready: that status is Ready;
	//   - "get": the status manager read the pod before a patch;
	//   - "patch": the API server acknowledged a status patch; Ready: the
	//     status it returned is Ready;
	//   - "step:sandbox", "step:create", "step:start", ...: a step of
	//     podsync's SyncPod ended (traceStep), with no pod.
	Stage string
	At    time.Time     // when the stage ended
	Took  time.Duration // for get and patch: the request's round trip
	Ready bool
}

// traceStep reports a step of podsync's SyncPod (podsync.WithTrace) as a
// TraceEvent of stage "step:" and the step's name, with no pod (the
// syncer does not say which): Name is the container's name, Took the
// step's duration.
func (a *agent) traceStep(s podsync.Step) {
	a.Trace(TraceEvent{Name: s.Container, Stage: "step:" + s.Name, At: time.Now(), Took: s.Duration})
}

// trace reports a stage of pod to the trace sink, if any.
func (a *agent) trace(pod *corev1.Pod, stage string, took time.Duration, ready bool) {
	if a.Trace == nil || pod == nil {
		return
	}
	a.Trace(TraceEvent{Pod: pod.UID, Name: pod.Namespace + "/" + pod.Name, Stage: stage, At: time.Now(), Took: took, Ready: ready})
}

// volumeProvider is the volumes podsync sets up: the volume manager's
// beside the in-tree ones of a.volumes, timed for the trace sink when
// there is one.
func (a *agent) volumeProvider() podsync.VolumeProvider {
	p := volumemanager.Provider{Manager: a.vm, InTree: a.volumes}
	if a.Trace == nil {
		return p
	}
	return tracedVolumes{a, p}
}

// tracedVolumes reports each volume setup ("volumes", Took: how long it
// took) to the trace sink.
type tracedVolumes struct {
	a *agent
	p volumemanager.Provider
}

func (v tracedVolumes) Volumes(ctx context.Context, pod *corev1.Pod) (mounts.VolumeMap, error) {
	start := time.Now()
	m, err := v.p.Volumes(ctx, pod)
	v.a.trace(pod, "volumes", time.Since(start), false)
	return m, err
}

// tracedClient is the status manager's client reporting each read and
// patch to the trace sink.
type tracedClient struct {
	apiClient
	a *agent
}

func (c tracedClient) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	start := time.Now()
	pod, err := c.apiClient.GetPod(ctx, ns, name)
	if err == nil {
		c.a.trace(pod, "get", time.Since(start), podReady(pod.Status))
	}
	return pod, err
}

func (c tracedClient) PatchPodStatus(ctx context.Context, ns, name string, patch []byte) (*corev1.Pod, error) {
	start := time.Now()
	pod, err := c.apiClient.PatchPodStatus(ctx, ns, name, patch)
	if err == nil {
		c.a.trace(pod, "patch", time.Since(start), podReady(pod.Status))
	}
	return pod, err
}

func podReady(s corev1.PodStatus) bool {
	for _, c := range s.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
