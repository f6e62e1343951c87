package apiobjects_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/apiobjects"
)

func TestObjects(t *testing.T) {
	ctx := context.Background()
	var objs apiobjects.Objects
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("v")}}
	objs.SetSecret(sec)
	objs.SetConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}, Data: map[string]string{"k": "v"}})
	objs.SetServiceAccount(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default"}})

	sec.Data["k"] = []byte("changed by the caller")
	got, err := objs.GetSecret(ctx, "ns", "s")
	if err != nil || string(got.Data["k"]) != "v" {
		t.Fatalf("secret %v, %v: want the copy taken at SetSecret", got, err)
	}
	got.Data["k"] = []byte("changed by a reader")
	if again, _ := objs.GetSecret(ctx, "ns", "s"); string(again.Data["k"]) != "v" {
		t.Fatalf("a reader changed the stored secret")
	}
	if cm, err := objs.GetConfigMap(ctx, "ns", "c"); err != nil || cm.Data["k"] != "v" {
		t.Fatalf("configmap %v, %v", cm, err)
	}
	if _, err := objs.GetServiceAccount(ctx, "ns", "default"); err != nil {
		t.Fatal(err)
	}

	// Missing objects: NotFound, with the messages of kubelet's managers.
	for _, tt := range []struct {
		get  func() error
		want string
	}{
		{func() error { _, err := objs.GetSecret(ctx, "other", "s"); return err }, `secret "s" not found`},
		{func() error { _, err := objs.GetConfigMap(ctx, "ns", "nope"); return err }, `configmap "nope" not found`},
		{func() error { _, err := objs.GetServiceAccount(ctx, "ns", "nope"); return err }, `serviceaccount "nope" not found`},
	} {
		if err := tt.get(); !apierrors.IsNotFound(err) || err.Error() != tt.want {
			t.Errorf("error %v, want NotFound %q", err, tt.want)
		}
	}

	objs.DeleteSecret("ns", "s")
	objs.DeleteConfigMap("ns", "c")
	objs.DeleteServiceAccount("ns", "default")
	objs.DeleteSecret("ns", "never there")
	if _, err := objs.GetSecret(ctx, "ns", "s"); !apierrors.IsNotFound(err) {
		t.Fatalf("deleted secret: %v", err)
	}
	if _, err := objs.GetConfigMap(ctx, "ns", "c"); !apierrors.IsNotFound(err) {
		t.Fatalf("deleted configmap: %v", err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := objs.GetConfigMap(cancelled, "ns", "c"); err != context.Canceled {
		t.Fatalf("cancelled: %v", err)
	}
}

// Writers and readers at once (run with -race).
func TestObjectsConcurrent(t *testing.T) {
	var objs apiobjects.Objects
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprint("s", i%2)
			for range 100 {
				objs.SetSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}})
				if _, err := objs.GetSecret(context.Background(), "ns", name); err != nil && !apierrors.IsNotFound(err) {
					t.Error(err)
				}
				objs.DeleteSecret("ns", name)
			}
		})
	}
	wg.Wait()
}

func BenchmarkObjectsGetSecret(b *testing.B) {
	var objs apiobjects.Objects
	objs.SetSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"a": []byte("1"), "b": []byte("2")}})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := objs.GetSecret(ctx, "ns", "s"); err != nil {
			b.Fatal(err)
		}
	}
}
