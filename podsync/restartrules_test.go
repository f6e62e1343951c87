package podsync_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

func TestContainerShouldRestart(t *testing.T) {
	always, never, onFailure := corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure
	rule := func(op corev1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) []corev1.ContainerRestartRule {
		return []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}}
	}
	cases := []struct {
		name   string
		pod    corev1.RestartPolicy
		policy *corev1.ContainerRestartPolicy
		rules  []corev1.ContainerRestartRule
		exit   int32
		want   bool
	}{
		{"pod Always", corev1.RestartPolicyAlways, nil, nil, 0, true},
		{"pod OnFailure, 0", corev1.RestartPolicyOnFailure, nil, nil, 0, false},
		{"pod OnFailure, 1", corev1.RestartPolicyOnFailure, nil, nil, 1, true},
		{"pod Never", corev1.RestartPolicyNever, nil, nil, 1, false},
		{"pod Never, container Always", corev1.RestartPolicyNever, &always, nil, 1, true},
		{"pod Always, container Never", corev1.RestartPolicyAlways, &never, nil, 1, false},
		{"container OnFailure, 0", corev1.RestartPolicyAlways, &onFailure, nil, 0, false},
		{"rule In matches", corev1.RestartPolicyNever, &never, rule(corev1.ContainerRestartRuleOnExitCodesOpIn, 42), 42, true},
		{"rule In misses", corev1.RestartPolicyNever, &never, rule(corev1.ContainerRestartRuleOnExitCodesOpIn, 42), 1, false},
		{"rule NotIn [42,137]", corev1.RestartPolicyNever, &never, rule(corev1.ContainerRestartRuleOnExitCodesOpNotIn, 42, 137), 1, true},
		{"rule NotIn, 137", corev1.RestartPolicyNever, &never, rule(corev1.ContainerRestartRuleOnExitCodesOpNotIn, 42, 137), 137, false},
		{"rules without container policy ignored", corev1.RestartPolicyNever, nil, rule(corev1.ContainerRestartRuleOnExitCodesOpIn, 1), 1, false},
	}
	for _, c := range cases {
		ct := &corev1.Container{Name: "c", RestartPolicy: c.policy, RestartPolicyRules: c.rules}
		if got := podsync.ContainerShouldRestart(ct, &corev1.PodSpec{RestartPolicy: c.pod}, c.exit); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestRestartAllContainersRefused(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := appPod("all")
	never := corev1.ContainerRestartPolicyNever
	pod.Spec.Containers[0].RestartPolicy = &never
	pod.Spec.Containers[0].RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}}}}
	st, _ := h.syncer.Status(context.Background(), pod)
	r := h.syncer.SyncPod(context.Background(), pod, st, nil)
	if !errors.Is(r.Error(), criconfig.ErrUnsupported) || h.fake.CallCount("RunPodSandbox") != 0 {
		t.Fatalf("result %v, %d sandboxes", r.Error(), h.fake.CallCount("RunPodSandbox"))
	}
}

// After a sandbox change the init containers are purged, but, as in
// kubelet, the next init attempt counts on from the last restart count.
func TestInitRestartCountAcrossSandboxChange(t *testing.T) {
	h := newHarness(t, false, []fake.Option{fake.WithStartFunc(exitInits(nil))})
	pod := demoPod()
	h.converge(pod, 10)
	st, _ := h.syncer.Status(context.Background(), pod)
	if err := h.fake.KillSandbox(st.SandboxStatuses[0].Id); err != nil {
		t.Fatal(err)
	}
	h.fake.ResetCalls()
	h.sync(pod)
	var counts []string
	for _, c := range h.fake.Calls() {
		if req, ok := c.Request.(*runtimeapi.CreateContainerRequest); ok {
			counts = append(counts, req.Config.Metadata.Name+"="+req.Config.Annotations[podsync.AnnotationContainerRestartCount])
		}
	}
	if len(counts) == 0 || counts[0] != "init-a=1" {
		t.Fatalf("created after the sandbox change: %v, want init-a with restart count 1", counts)
	}
	if h.fake.CallCount("RemoveContainer") == 0 {
		t.Fatal("old init instances not purged")
	}
}

// Result.Error says a repeated message once, as kubelet's aggregate.
func TestResultErrorDeduplicates(t *testing.T) {
	e := errors.New("boom")
	r := podsync.Result{Results: []*podsync.SyncResult{
		{Action: podsync.ActionKillContainer, Target: "a", Err: e, Message: "m"},
		{Action: podsync.ActionKillContainer, Target: "a", Err: e, Message: "m"},
	}}
	if got := r.Error().Error(); got != `failed to "KillContainer" for "a" with boom: "m"` {
		t.Fatalf("%s", got)
	}
	r.Results = append(r.Results, &podsync.SyncResult{Action: podsync.ActionKillContainer, Target: "b", Err: e, Message: "m"})
	if got := r.Error().Error(); got != `[failed to "KillContainer" for "a" with boom: "m", failed to "KillContainer" for "b" with boom: "m"]` {
		t.Fatalf("%s", got)
	}
	if !errors.Is(r.Error(), e) {
		t.Fatal("errors.Is lost")
	}
}
