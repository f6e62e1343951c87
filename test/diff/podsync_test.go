package diff

import (
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"

	"github.com/podstart/podstart/podsync"
)

func randomContainer(r *rand.Rand) corev1.Container {
	c := corev1.Container{Name: trickyString(r, 6), Image: trickyString(r, 6)}
	// Fields outside the hash, so a change there must not change it.
	if r.IntN(2) == 0 {
		c.Command = []string{trickyString(r, 3)}
		c.Env = []corev1.EnvVar{{Name: trickyString(r, 2), Value: trickyString(r, 2)}}
		c.ImagePullPolicy = corev1.PullAlways
		c.WorkingDir = trickyString(r, 2)
	}
	return c
}

func TestHashContainer(t *testing.T) {
	r := newRand(t)
	n := cases(20000)
	d := differences{t: t}
	for range n {
		c := randomContainer(r)
		if got, want := podsync.HashContainer(&c), kubecontainer.HashContainer(&c); got != want {
			d.add("HashContainer(name %q, image %q) = %x, kubelet %x", c.Name, c.Image, got, want)
		}
	}
	d.report(n, "container hashes")
}

var (
	restartNames    = []string{"a", "b", "c"}
	restartStates   = []string{"created", "running", "exited", "unknown", ""}
	restartExits    = []int{0, 1, 2, 42, 137, 143, -1, 255}
	restartPolicies = []corev1.RestartPolicy{"", corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever, "Sometimes"}
)

// randomRestartCase is a pod with up to three app containers and a runtime
// status holding any number of instances of each (newest first), in any
// state, with any exit code. Container-level restart policies and rules
// are added only with rules set.
func randomRestartCase(r *rand.Rand, rules bool) (*corev1.Pod, *podsync.PodStatus, *kubecontainer.PodStatus) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: pick(r, restartPolicies)}}
	if r.IntN(10) == 0 {
		pod.DeletionTimestamp = &metav1.Time{}
	}
	for _, name := range restartNames[:1+r.IntN(len(restartNames))] {
		c := corev1.Container{Name: name, Image: "busybox"}
		if rules && r.IntN(2) == 0 {
			c.RestartPolicy = new(pick(r, []corev1.ContainerRestartPolicy{
				corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyOnFailure, corev1.ContainerRestartPolicyNever}))
			if r.IntN(2) == 0 {
				op := pick(r, []corev1.ContainerRestartRuleOnExitCodesOperator{
					corev1.ContainerRestartRuleOnExitCodesOpIn, corev1.ContainerRestartRuleOnExitCodesOpNotIn})
				c.RestartPolicyRules = []corev1.ContainerRestartRule{{
					Action:    corev1.ContainerRestartRuleActionRestart,
					ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: op, Values: []int32{int32(pick(r, restartExits)), 137}},
				}}
			}
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	ours, theirs := &podsync.PodStatus{}, &kubecontainer.PodStatus{}
	for range r.IntN(6) {
		name := pick(r, append(restartNames, "other"))
		state := pick(r, restartStates)
		exit := pick(r, restartExits)
		ours.ContainerStatuses = append(ours.ContainerStatuses, &podsync.ContainerStatus{
			Name: name, State: podsync.ContainerState(state), ExitCode: exit})
		theirs.ContainerStatuses = append(theirs.ContainerStatuses, &kubecontainer.Status{
			Name: name, State: kubecontainer.State(state), ExitCode: exit})
	}
	return pod, ours, theirs
}

// TestShouldContainerBeRestarted covers containers without a restartPolicy
// of their own: there podstart must answer as kubelet does.
func TestShouldContainerBeRestarted(t *testing.T) {
	r := newRand(t)
	n := cases(20000)
	d := differences{t: t}
	logger := klog.Background()
	for range n {
		pod, ours, theirs := randomRestartCase(r, false)
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			got := podsync.ShouldContainerBeRestarted(c, pod, ours)
			want := kubecontainer.ShouldContainerBeRestarted(logger, c, pod, theirs)
			if got != want {
				s := ours.FindContainerStatusByName(c.Name)
				d.add("ShouldContainerBeRestarted(%s) = %v, kubelet %v; pod restartPolicy %q, deleted %v, newest status %+v",
					c.Name, got, want, pod.Spec.RestartPolicy, pod.DeletionTimestamp != nil, s)
			}
		}
	}
	d.report(n, "pods' restart decisions")
}

// TestShouldContainerBeRestartedWithRules: containers with their own
// restartPolicy and restartPolicyRules (ContainerRestartRules, on by
// default since v1.35).
func TestShouldContainerBeRestartedWithRules(t *testing.T) {
	r := newRand(t)
	n := cases(20000)
	d := differences{t: t}
	withPolicy := 0
	logger := klog.Background()
	for range n {
		pod, ours, theirs := randomRestartCase(r, true)
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if c.RestartPolicy != nil {
				withPolicy++
			}
			got := podsync.ShouldContainerBeRestarted(c, pod, ours)
			if want := kubecontainer.ShouldContainerBeRestarted(logger, c, pod, theirs); got != want {
				d.add("ShouldContainerBeRestarted(%s) = %v, kubelet %v; container policy %v rules %+v, pod %q, newest %+v",
					c.Name, got, want, c.RestartPolicy, c.RestartPolicyRules, pod.Spec.RestartPolicy, ours.FindContainerStatusByName(c.Name))
			}
		}
	}
	t.Logf("%d decisions for containers with their own restartPolicy", withPolicy)
	d.report(n, "pods' restart decisions with container restart rules")
}
