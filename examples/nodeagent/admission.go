package main

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/podstart/podstart/admission"
	"github.com/podstart/podstart/nodestatus"
	"github.com/podstart/podstart/podworker"
)

// newAdmission is kubelet's pod admission for podworker.WithAdmission:
// the eviction manager's handler first (under node pressure), then
// admission's handlers over the node the heartbeat keeps (read again from
// the API server when node affinity alone fails, as kubelet does), the
// kernel's safe sysctls plus -allowed-unsafe-sysctls, and the host's
// AppArmor. A rejection is recorded as kubelet's Warning event (the
// handler's reason and message); podworker writes the pod's Failed
// status.
func (a *agent) newAdmission(heartbeat *nodestatus.Heartbeat, recorder record.EventRecorder) (podworker.AdmitFunc, error) {
	kernel, err := admission.KernelVersion()
	if err != nil {
		return nil, err
	}
	sysctls, err := admission.NewSysctlAllowlist(append(admission.SafeSysctls(kernel), a.AllowedUnsafeSysctls...))
	if err != nil {
		return nil, fmt.Errorf("allowed unsafe sysctls: %w", err)
	}
	admitter, err := admission.New(admission.Config{
		Node: func(ctx context.Context, fresh bool) (*corev1.Node, error) {
			if !fresh {
				if n := heartbeat.Node(); n != nil {
					return n, nil
				}
			}
			return a.Client.CoreV1().Nodes().Get(ctx, a.NodeName, metav1.GetOptions{})
		},
		Sysctls:         sysctls,
		AppArmorEnabled: a.host.AppArmorEnabled,
		Before:          []admission.Handler{a.evictionAdmit},
		// Device plugins' devices are allocated at admission, as
		// kubelet's topology manager admit handler allocates them.
		Resources:             []admission.Handler{a.dm.Admit},
		UpdatePluginResources: a.dm.UpdatePluginResources,
	})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, pod *corev1.Pod, admitted []*corev1.Pod) error {
		err := admitter.Admit(ctx, pod, admitted)
		var r *admission.Rejection
		if errors.As(err, &r) {
			recorder.Eventf(pod, corev1.EventTypeWarning, r.Reason(), "%s", r.Message())
		}
		return err
	}, nil
}

// evictionAdmit is kubelet's eviction admit handler: under node pressure,
// eviction.Manager.Admit's refusal (reason Evicted); nothing without
// eviction.
func (a *agent) evictionAdmit(_ context.Context, pod *corev1.Pod, _ []*corev1.Pod) error {
	if m := a.evicter.Load(); m != nil {
		return m.Admit(pod)
	}
	return nil
}
