package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/images/pullrecords"
	"github.com/podstart/podstart/runtime"
)

// KEP-2535 on containerd: pod A, with the pull secret, pulls the private
// image; pod B on the same node (same manager and records), without it,
// does not get the image under kubelet's default policy (its IfNotPresent
// container re-pulls with no credentials: ErrImagePull with the
// registry's 401; its Never container: ErrImageNeverPull), and does under
// NeverVerify.
func TestEnsureSecretPulledImages(t *testing.T) {
	e, rt := setup(t)
	for _, tc := range []struct {
		name   string
		policy pullrecords.Policy
		bRuns  bool
	}{
		{"default policy (NeverVerifyPreloadedImages)", "", false},
		{"NeverVerify", pullrecords.NeverVerify, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			removeImage(t, rt, e.image)
			dir := filepath.Join(t.TempDir(), "image_manager")
			recs, err := pullrecords.New(context.Background(), pullrecords.Config{Dir: dir, Policy: tc.policy}, rt)
			if err != nil {
				t.Fatal(err)
			}
			a := newAgent(t, rt, t.TempDir(), images.WithPullRecords(recs))

			secret := pullSecret(e.registry, e.user, e.pass)
			secret.UID = "e2e-regcred-uid"
			podA := newPod(t, rt, "secret-a", sleeper("app", e.image))
			a.converge(podA, secret)
			if got := a.images.pulls.Load(); got != 1 {
				t.Fatalf("pod A: %d pulls, want 1", got)
			}

			podB := newPod(t, rt, "no-secret-b", sleeper("app", e.image))
			if tc.bRuns {
				a.converge(podB)
				if got := a.images.pulls.Load(); got != 1 {
					t.Errorf("pod B pulled (%d pulls)", got)
				}
			} else {
				err := firstError(a.sync(podB))
				if !errors.Is(err, images.ErrImagePull) || !errors.Is(err, runtime.ErrUnauthorized) {
					t.Fatalf("pod B without the secret: %v, want ErrImagePull with the registry's 401", err)
				}
				if running(podB, a.status(podB)) {
					t.Fatal("pod B runs the private image")
				}
				if got := a.images.pulls.Load(); got != 2 {
					t.Errorf("%d pulls, want 2 (pod B's verification)", got)
				}
				never := sleeper("app", e.image)
				never.ImagePullPolicy = corev1.PullNever
				podB2 := newPod(t, rt, "no-secret-never", never)
				if err := firstError(a.sync(podB2)); !errors.Is(err, images.ErrImageNeverPull) {
					t.Fatalf("pod B, Never: %v, want ErrImageNeverPull", err)
				}
				// Pod A's secret still gives the image without a pull.
				// The containerd is shared with other test processes,
				// which may remove the image; without it there is
				// nothing left to check here.
				if st, err := rt.ImageStatus(context.Background(), &runtimeapi.ImageSpec{Image: e.image}, false); err != nil || st.GetImage() == nil {
					t.Skipf("image %s removed by another process: %v", e.image, err)
				}
				podA2 := newPod(t, rt, "secret-a2", never)
				a.converge(podA2, secret)
				if got := a.images.pulls.Load(); got != 2 {
					t.Errorf("pod A2 pulled (%d pulls)", got)
				}
			}

			// The record is kubelet's, with the secret's coordinates and
			// a hash, never the password.
			st, err := rt.ImageStatus(context.Background(), &runtimeapi.ImageSpec{Image: e.image}, false)
			if err != nil || st.GetImage() == nil {
				t.Fatalf("image status: %v", err)
			}
			rec, ok, err := recs.Record(st.GetImage().GetId())
			if err != nil || !ok {
				t.Fatalf("no record of %s: %v", st.GetImage().GetId(), err)
			}
			name, _ := pullrecords.TrimTagDigest(e.image)
			got := rec.CredentialMapping[name].KubernetesSecrets
			if len(got) != 1 || got[0].Name != "regcred" || got[0].UID != "e2e-regcred-uid" || len(got[0].CredentialHash) != 64 {
				t.Errorf("recorded secrets = %+v", got)
			}
			_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, _ := os.ReadFile(path)
				if strings.Contains(string(b), e.pass) {
					t.Errorf("%s holds the password", path)
				}
				return nil
			})
		})
	}
}
