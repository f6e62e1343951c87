package apiobjects_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/podstart/podstart/apiobjects"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
)

// recordedEvents keeps events as client-go's record.FakeRecorder writes
// them: "<type> <reason> <message>", with the object they are on.
type recordedEvents struct {
	mu      sync.Mutex
	events  []string
	objects []apiruntime.Object
}

func (r *recordedEvents) Eventf(obj apiruntime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, eventtype+" "+reason+" "+fmt.Sprintf(messageFmt, args...))
	r.objects = append(r.objects, obj)
}

func pullPod(refs ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "nsFoo", Name: "podFoo"}}
	for _, r := range refs {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: r})
	}
	return pod
}

func pullSecret(name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "nsFoo", Name: name}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}}
}

func secretNames(ss []corev1.Secret) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

func TestPullSecrets(t *testing.T) {
	var objs apiobjects.Objects
	for _, n := range []string{"a", "b", "c", "sa-1", "sa-2"} {
		objs.SetSecret(pullSecret(n))
	}
	objs.SetServiceAccount(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "nsFoo", Name: "default"},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "sa-1"}, {Name: "a"}, {Name: "sa-2"}, {Name: "sa-gone"}}})
	objs.SetServiceAccount(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "nsFoo", Name: "builder"},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "sa-2"}}})
	down := &fetchCounter{Source: &objs, fail: apierrors.NewServiceUnavailable("etcd down")}

	tests := []struct {
		name      string
		pod       *corev1.Pod
		source    apiobjects.Source
		withSA    bool
		want      []string
		wantEvent string
	}{
		{
			// kubelet's TestGetNonExistentImagePullSecret
			name:      "missing secret: none, one event",
			pod:       pullPod("secretFoo"),
			source:    &objs,
			want:      []string{},
			wantEvent: "Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (secretFoo); attempting to pull the image may not succeed.",
		},
		{
			name:   "the pod's, in order, empty names skipped without an event",
			pod:    pullPod("c", "", "a", "b"),
			source: &objs,
			want:   []string{"c", "a", "b"},
		},
		{
			name:      "the ones found go on; the event names every one left out, in order",
			pod:       pullPod("x", "a", "y"),
			source:    &objs,
			want:      []string{"a"},
			wantEvent: "Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (x, y); attempting to pull the image may not succeed.",
		},
		{
			name:      "any fetch error is skipped, not only NotFound",
			pod:       pullPod("a"),
			source:    down,
			want:      []string{},
			wantEvent: "Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (a); attempting to pull the image may not succeed.",
		},
		{
			name:      "no Source: every one left out",
			pod:       pullPod("a"),
			want:      []string{},
			wantEvent: "Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (a); attempting to pull the image may not succeed.",
		},
		{
			name:   "kubelet's rule: the service account's are not read",
			pod:    pullPod("b"),
			source: &objs,
			want:   []string{"b"},
		},
		{
			name:      "with the service account's: after the pod's, names listed once",
			pod:       pullPod("b", "a"),
			source:    &objs,
			withSA:    true,
			want:      []string{"b", "a", "sa-1", "sa-2"},
			wantEvent: "Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (sa-gone); attempting to pull the image may not succeed.",
		},
		{
			name: "with the service account's: the pod's named account",
			pod: func() *corev1.Pod {
				p := pullPod()
				p.Spec.ServiceAccountName = "builder"
				return p
			}(),
			source: &objs,
			withSA: true,
			want:   []string{"sa-2"},
		},
		{
			name: "with the service account's: a missing account adds nothing",
			pod: func() *corev1.Pod {
				p := pullPod("a")
				p.Spec.ServiceAccountName = "gone"
				return p
			}(),
			source: &objs,
			withSA: true,
			want:   []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordedEvents{}
			p := &apiobjects.PullSecrets{Source: tt.source, Recorder: rec}
			if tt.withSA {
				p.ServiceAccounts = &objs
			}
			got, err := p.ForPod(context.Background(), tt.pod)
			if err != nil {
				t.Fatal(err)
			}
			if names := secretNames(got); !reflect.DeepEqual(names, tt.want) {
				t.Errorf("secrets %v, want %v", names, tt.want)
			}
			// v1.37.2: no event on the lookup itself.
			if len(rec.events) != 0 {
				t.Errorf("events on lookup %q, want none", rec.events)
			}
			// The event follows a sync whose pull failed.
			p.AfterSync(tt.pod, pullFailed)
			var want []string
			if tt.wantEvent != "" {
				want = []string{tt.wantEvent}
			}
			if !reflect.DeepEqual(rec.events, want) {
				t.Errorf("events %q, want %q", rec.events, want)
			}
			for _, o := range rec.objects {
				if o != tt.pod {
					t.Errorf("event on %v, want the pod", o)
				}
			}
		})
	}
}

type failingServiceAccounts struct{ err error }

func (f failingServiceAccounts) GetServiceAccount(context.Context, string, string) (*corev1.ServiceAccount, error) {
	return nil, f.err
}

func TestPullSecretsErrors(t *testing.T) {
	var objs apiobjects.Objects
	objs.SetSecret(pullSecret("a"))
	unavailable := apierrors.NewServiceUnavailable("etcd down")
	p := &apiobjects.PullSecrets{Source: &objs, ServiceAccounts: failingServiceAccounts{unavailable}}
	if _, err := p.ForPod(context.Background(), pullPod("a")); err != unavailable {
		t.Fatalf("service account unreadable: %v, want its error (the sync is retried)", err)
	}

	// A Recorder is optional.
	quiet := &apiobjects.PullSecrets{Source: &objs}
	if got, err := quiet.ForPod(context.Background(), pullPod("gone", "a")); err != nil || len(got) != 1 {
		t.Fatalf("without a recorder: %v, %v", got, err)
	}
	quiet.AfterSync(pullPod("gone", "a"), pullFailed)

	// A fetch that fails because ctx ended is no missing secret: no event.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := &recordedEvents{}
	cancelled := &apiobjects.PullSecrets{Source: &objs, Recorder: rec}
	if _, err := cancelled.ForPod(ctx, pullPod("a")); err != context.Canceled {
		t.Fatalf("cancelled: %v", err)
	}
	cancelled.AfterSync(pullPod("a"), pullFailed)
	if len(rec.events) != 0 {
		t.Fatalf("events %q", rec.events)
	}
}

// pullFailed is a sync whose image pull failed (kubelet's ErrImagePull).
var pullFailed = podsync.Result{Results: []*podsync.SyncResult{
	{Action: podsync.ActionStartContainer, Target: "app", Err: &images.Error{Reason: images.ErrImagePull, Err: errors.New("401 Unauthorized")}},
}}

// TestPullSecretsEventAfterFailedPull ports kubelet v1.37.2's
// TestPullErrorReportsMissingSecrets and
// TestMissingSecretsNotReportedWithoutPullError: the event follows a
// sync that tried to pull and failed, and no other.
func TestPullSecretsEventAfterFailedPull(t *testing.T) {
	var objs apiobjects.Objects
	objs.SetSecret(pullSecret("a"))
	const event = "Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (missing); attempting to pull the image may not succeed."
	step := func(err error) *podsync.SyncResult {
		return &podsync.SyncResult{Action: podsync.ActionStartContainer, Target: "app", Err: err}
	}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		result podsync.Result
		want   []string
	}{
		{name: "a missing secret and a failed pull", pod: pullPod("missing"), result: pullFailed, want: []string{event}},
		{name: "a failed pull among other steps", pod: pullPod("a", "missing"), result: podsync.Result{Results: []*podsync.SyncResult{
			{Action: podsync.ActionCreatePodSandbox}, step(nil), step(&images.Error{Reason: images.ErrImagePull})}}, want: []string{event}},
		{name: "a stalled pull is a failed pull", pod: pullPod("missing"), result: podsync.Result{Results: []*podsync.SyncResult{
			step(&images.Error{Reason: images.ErrImagePull, Err: images.ErrPullStalled})}}, want: []string{event}},
		{name: "the pull succeeded", pod: pullPod("missing"), result: podsync.Result{Results: []*podsync.SyncResult{step(nil)}}},
		{name: "nothing pulled", pod: pullPod("missing")},
		{name: "a pull back-off: no pull was tried", pod: pullPod("missing"), result: podsync.Result{Results: []*podsync.SyncResult{
			step(&images.Error{Reason: images.ErrImagePullBackOff})}}},
		{name: "the registry unavailable is not ErrImagePull", pod: pullPod("missing"), result: podsync.Result{Results: []*podsync.SyncResult{
			step(&images.Error{Reason: images.ErrRegistryUnavailable})}}},
		{name: "another failure", pod: pullPod("missing"), result: podsync.Result{Results: []*podsync.SyncResult{
			step(podsync.ErrCreateContainer)}}},
		{name: "a failed pull, every secret found", pod: pullPod("a"), result: pullFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordedEvents{}
			p := &apiobjects.PullSecrets{Source: &objs, Recorder: rec}
			if _, err := p.ForPod(context.Background(), tt.pod); err != nil {
				t.Fatal(err)
			}
			p.AfterSync(tt.pod, tt.result)
			if !reflect.DeepEqual(rec.events, tt.want) {
				t.Fatalf("events %q, want %q", rec.events, tt.want)
			}
			for _, o := range rec.objects {
				if o != tt.pod {
					t.Errorf("event on %v, want the pod", o)
				}
			}
			// AfterSync took the names: a second result without a new
			// lookup says nothing.
			p.AfterSync(tt.pod, pullFailed)
			if len(rec.events) != len(tt.want) {
				t.Fatalf("a second AfterSync sent %q", rec.events[len(tt.want):])
			}
		})
	}

	// Pods are kept apart; a later lookup that finds everything clears
	// what an earlier one left out.
	rec := &recordedEvents{}
	p := &apiobjects.PullSecrets{Source: &objs, Recorder: rec}
	one, two := pullPod("missing"), pullPod("missing")
	one.UID, two.UID = "uid-1", "uid-2"
	p.ForPod(context.Background(), one)
	p.ForPod(context.Background(), two)
	objs.SetSecret(pullSecret("missing"))
	p.ForPod(context.Background(), two)
	p.AfterSync(two, pullFailed)
	p.AfterSync(one, pullFailed)
	if len(rec.events) != 1 || rec.objects[0] != one {
		t.Fatalf("events %q on %v, want one on the first pod", rec.events, rec.objects)
	}
}

// The event and the log name secrets; never what is in them.
func TestPullSecretsEventHasNoCredentials(t *testing.T) {
	var objs apiobjects.Objects
	s := pullSecret("a")
	s.Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"r.io":{"username":"robot","password":"hunter2"}}}`)
	objs.SetSecret(s)
	rec := &recordedEvents{}
	p := &apiobjects.PullSecrets{Source: &objs, Recorder: rec}
	pod := pullPod("a", "missing")
	p.ForPod(context.Background(), pod)
	p.AfterSync(pod, pullFailed)
	if len(rec.events) != 1 || strings.Contains(rec.events[0], "hunter2") || strings.Contains(rec.events[0], "robot") {
		t.Fatalf("events %q", rec.events)
	}
}
