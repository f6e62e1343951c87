package apiobjects_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/podstart/podstart/apiobjects"
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
			p := apiobjects.PullSecrets{Source: tt.source, Recorder: rec}
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
	p := apiobjects.PullSecrets{Source: &objs, ServiceAccounts: failingServiceAccounts{unavailable}}
	if _, err := p.ForPod(context.Background(), pullPod("a")); err != unavailable {
		t.Fatalf("service account unreadable: %v, want its error (the sync is retried)", err)
	}

	// A Recorder is optional.
	if got, err := (apiobjects.PullSecrets{Source: &objs}).ForPod(context.Background(), pullPod("gone", "a")); err != nil || len(got) != 1 {
		t.Fatalf("without a recorder: %v, %v", got, err)
	}

	// A fetch that fails because ctx ended is no missing secret: no event.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := &recordedEvents{}
	if _, err := (apiobjects.PullSecrets{Source: &objs, Recorder: rec}).ForPod(ctx, pullPod("a")); err != context.Canceled {
		t.Fatalf("cancelled: %v", err)
	}
	if len(rec.events) != 0 {
		t.Fatalf("events %q", rec.events)
	}
}
