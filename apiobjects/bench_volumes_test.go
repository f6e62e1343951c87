package apiobjects

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	fakemount "github.com/podstart/podstart/mounts/fake"
)

// A sync of a pod whose Secret (16 keys) and kube-api-access volumes are
// unchanged: payloads built and compared with the files, nothing
// rewritten. Every sync of a running pod does this.
func BenchmarkVolumesUnchanged(b *testing.B) {
	data := map[string][]byte{}
	for i := range 16 {
		data[fmt.Sprintf("key-%d", i)] = make([]byte, 256)
	}
	src := newTestSource(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: data},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "CA"}})
	pod := volumePod(secretVolume("creds", "creds", false),
		corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}})
	v := NewVolumes(src, b.TempDir(), WithMounter(fakemount.New()), WithTokenRequester(&testRequester{}))
	ctx := context.Background()
	if _, err := v.Volumes(ctx, pod); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Volumes(ctx, pod); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDownwardAPIPayload(b *testing.B) {
	pod := downwardPod()
	items := []corev1.DownwardAPIVolumeFile{
		{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
		{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory"}},
	}
	mode := int32(0o644)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DownwardAPIPayload(items, pod, nil, &mode); err != nil {
			b.Fatal(err)
		}
	}
}
