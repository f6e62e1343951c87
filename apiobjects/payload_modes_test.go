package apiobjects

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/mounts"
)

// Every payload builder refuses a defaultMode or item mode outside
// 0–0777 (the API server's "must be a number between 0 and 0777 (octal),
// both inclusive"), naming the field, instead of converting it: on old
// main fs.FileMode(int32) made -1 and bit 22/23 setuid and setgid files.
// 0 and 0777 are accepted.
func TestPayloadModesRefused(t *testing.T) {
	ctx := context.Background()
	src := newTestSource(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("v")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}, Data: map[string]string{"k": "v"}})
	pod := volumePod()
	builders := map[string]func(def int32, item *int32) (map[string]mounts.File, error){
		"secret": func(def int32, item *int32) (map[string]mounts.File, error) {
			return SecretPayload([]corev1.KeyToPath{{Key: "k", Path: "p"}, {Key: "k", Path: "q", Mode: item}}, src.secrets["ns/s"], &def, false)
		},
		"secret without items": func(def int32, item *int32) (map[string]mounts.File, error) {
			return SecretPayload(nil, src.secrets["ns/s"], &def, false)
		},
		"secret, item of a missing optional key": func(def int32, item *int32) (map[string]mounts.File, error) {
			return SecretPayload([]corev1.KeyToPath{{Key: "k", Path: "p"}, {Key: "gone", Path: "q", Mode: item}}, src.secrets["ns/s"], &def, true)
		},
		"configMap": func(def int32, item *int32) (map[string]mounts.File, error) {
			return ConfigMapPayload([]corev1.KeyToPath{{Key: "k", Path: "p"}, {Key: "k", Path: "q", Mode: item}}, src.configMaps["ns/c"], &def, false)
		},
		"downwardAPI": func(def int32, item *int32) (map[string]mounts.File, error) {
			return DownwardAPIPayload([]corev1.DownwardAPIVolumeFile{
				{Path: "p", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
				{Path: "q", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: item}}, pod, nil, &def)
		},
		"projected": func(def int32, item *int32) (map[string]mounts.File, error) {
			return ProjectedPayload(ctx, Projection{Pod: pod, Objects: src, Tokens: NewTokens(&testRequester{}), Source: &corev1.ProjectedVolumeSource{DefaultMode: &def, Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Items: []corev1.KeyToPath{{Key: "k", Path: "s"}}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Items: []corev1.KeyToPath{{Key: "k", Path: "c"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "d", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: item}}}},
			}}})
		},
	}
	itemField := map[string]string{
		"secret": "items[1].mode", "secret, item of a missing optional key": "items[1].mode",
		"configMap": "items[1].mode", "downwardAPI": "items[1].mode", "projected": "sources[3].downwardAPI.items[0].mode",
	}
	for name, build := range builders {
		for _, bad := range []int32{-1, 0o1000, 0o4755, 1 << 22, 1<<23 | 0o644, -0o644} {
			t.Run(fmt.Sprintf("%s/defaultMode %d", name, bad), func(t *testing.T) {
				files, err := build(bad, nil)
				want := fmt.Sprintf("defaultMode: Invalid value: %d: must be a number between 0 and 0777 (octal), both inclusive", bad)
				if !errors.Is(err, ErrInvalidMode) || err.Error() != want || files != nil {
					t.Fatalf("%v, %v; want %q", showPayload(files), err, want)
				}
			})
			field, ok := itemField[name]
			if !ok {
				continue
			}
			t.Run(fmt.Sprintf("%s/item mode %d", name, bad), func(t *testing.T) {
				files, err := build(0o644, ptr.To(bad))
				want := fmt.Sprintf("%s: Invalid value: %d: must be a number between 0 and 0777 (octal), both inclusive", field, bad)
				if !errors.Is(err, ErrInvalidMode) || err.Error() != want || files != nil {
					t.Fatalf("%v, %v; want %q", showPayload(files), err, want)
				}
			})
		}
		for _, good := range []int32{0, 0o777} {
			files, err := build(good, ptr.To(good))
			if err != nil {
				t.Fatalf("%s mode %#o: %v", name, good, err)
			}
			for p, f := range files {
				if p != "token" && f.Mode != os.FileMode(good) {
					t.Errorf("%s: %s mode %v, want %#o", name, p, f.Mode, good)
				}
			}
		}
	}
}
