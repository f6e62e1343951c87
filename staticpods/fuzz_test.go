package staticpods

import (
	"errors"
	"testing"
)

// FuzzDecodePod: any input is either a pod that passes validation with
// kubelet's defaults in place, or an error matching ErrInvalidManifest;
// never a panic.
func FuzzDecodePod(f *testing.F) {
	f.Add([]byte(webPod))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","uid":"x"},"spec":{"containers":[{"name":"c","image":"i"}]}}`))
	f.Add([]byte("apiVersion: v1\nkind: PodList\nitems: []\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, o := range []Origin{{Source: SourceFile, Location: "/m/f", NodeName: "n"}, {Source: SourceHTTP, Location: "http://h/", NodeName: "n"}} {
			pod, _, err := DecodePod(data, o)
			if err != nil {
				if !errors.Is(err, ErrInvalidManifest) {
					t.Fatalf("error %v does not match ErrInvalidManifest", err)
				}
				continue
			}
			if pod.UID == "" || pod.Annotations[ConfigHashAnnotation] != string(pod.UID) || pod.Spec.NodeName != "n" || pod.Namespace == "" {
				t.Fatalf("defaults missing: %+v", pod.ObjectMeta)
			}
			if _, _, err := DecodePodList(data, o); err != nil && !errors.Is(err, ErrInvalidManifest) {
				t.Fatalf("list error %v", err)
			}
		}
	})
}
