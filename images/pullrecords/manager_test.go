package pullrecords

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Records in kubelet's format, as kubelet's pullmanager testdata holds them
// (file name: "sha256-" + hex SHA-256 of the image reference or image).
var (
	recSecret     = `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","lastUpdatedTime":"2024-10-21T12:26:40Z","imageRef":"testimageref","credentialMapping":{"docker.io/testing/test":{"kubernetesSecrets":[{"uid":"testsecretuid","namespace":"default","name":"pull-secret","credentialHash":"testsecrethash"}]}}}`
	recEmpty      = `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","lastUpdatedTime":"2024-10-21T12:26:40Z","imageRef":"testemptycredmapping"}`
	recAnon       = `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","lastUpdatedTime":"2024-10-21T12:26:40Z","imageRef":"testimage-anonpull","credentialMapping":{"docker.io/testing/test":{"nodePodsAccessible":true}}}`
	recBrokenHash = `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","lastUpdatedTime":"2024-10-21T12:26:40Z","imageRef":"test-brokenhash","credentialMapping":{"docker.io/testing/test":{"kubernetesSecrets":[{"uid":"testsecretuid","namespace":"default","name":"pull-secret","credentialHash":""}]}}}`
	recSA         = `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1alpha1","lastUpdatedTime":"2024-10-21T12:26:40Z","imageRef":"testimageref-sa","credentialMapping":{"docker.io/testing/test":{"kubernetesServiceAccounts":[{"uid":"test-sa-uid","namespace":"default","name":"test-sa"}]}}}`
	intentTest    = `{"kind":"ImagePullIntent","apiVersion":"kubelet.config.k8s.io/v1beta1","image":"docker.io/testing/test:latest"}`
)

func TestFileNamesAreKubelets(t *testing.T) {
	// The names of kubelet v1.36's pullmanager testdata files.
	for key, want := range map[string]string{
		"testimageref":                  "sha256-b3c0cc4278800b03a308ceb2611161430df571ca733122f0a40ac8b9792a9064",
		"testemptycredmapping":          "sha256-f8778b6393eaf39315e767a58cbeacf2c4b270d94b4d6926ee993d9e49444991",
		"docker.io/testing/test:latest": "sha256-aef2af226629a35d5f3ef0fdbb29fdbebf038d0acd8850590e8c48e1e283aa56",
	} {
		if got := fileName(key); got != want {
			t.Errorf("fileName(%q) = %s, want %s", key, got, want)
		}
	}
}

// writeFixture puts a record where kubelet would.
func writeFixture(t *testing.T, dir, sub, key, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sub, fileName(key)), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func secret(uid, ns, name, hash string) []Secret {
	return []Secret{{UID: uid, Namespace: ns, Name: name, CredentialHash: hash}}
}

// The cases of kubelet v1.36's TestFileBasedImagePullManager_MustAttemptImagePull.
func TestMustAttemptImagePull(t *testing.T) {
	sa := &ServiceAccount{UID: "test-sa-uid", Namespace: "default", Name: "test-sa"}
	tests := []struct {
		name            string
		policy          Policy
		podSecrets      []Secret
		podSA           *ServiceAccount
		image, imageRef string
		pulled          map[string]string // imageRef -> record
		pulling         map[string]string // image -> intent
		wantRecord      *Credentials
		want            bool
		wantCredsAsked  bool
		wantWrite       bool
	}{
		{name: "image exists and is recorded with pod's exact secret", policy: NeverVerifyPreloadedImages,
			podSecrets: secret("testsecretuid", "default", "pull-secret", "testsecrethash"),
			image:      "docker.io/testing/test:latest", imageRef: "testimageref", pulled: map[string]string{"testimageref": recSecret},
			want: false, wantCredsAsked: true},
		{name: "image exists and is recorded, no pod secrets", policy: NeverVerifyPreloadedImages,
			image: "docker.io/testing/test:latest", imageRef: "testimageref", pulled: map[string]string{"testimageref": recSecret},
			want: true, wantCredsAsked: true},
		{name: "image exists and is recorded with the same secret but different credential hash", policy: NeverVerifyPreloadedImages,
			podSecrets: secret("testsecretuid", "default", "pull-secret", "differenthash"),
			image:      "docker.io/testing/test:latest", imageRef: "testimageref", pulled: map[string]string{"testimageref": recSecret},
			wantRecord: &Credentials{KubernetesSecrets: secret("testsecretuid", "default", "pull-secret", "differenthash")},
			want:       false, wantCredsAsked: true, wantWrite: true},
		{name: "image exists and is recorded with a different secret with a different UID", policy: NeverVerifyPreloadedImages,
			podSecrets: secret("different uid", "default", "pull-secret", "differenthash"),
			image:      "docker.io/testing/test:latest", imageRef: "testimageref", pulled: map[string]string{"testimageref": recSecret},
			want: true, wantCredsAsked: true},
		{name: "image exists and is recorded with a different secret", policy: NeverVerifyPreloadedImages,
			podSecrets: secret("testsecretuid", "differentns", "pull-secret", "differenthash"),
			image:      "docker.io/testing/test:latest", imageRef: "testimageref", pulled: map[string]string{"testimageref": recSecret},
			want: true, wantCredsAsked: true},
		{name: "image exists and is recorded with a different secret with the same credential hash", policy: NeverVerifyPreloadedImages,
			podSecrets: secret("testsecretuid", "differentns", "pull-secret", "testsecrethash"),
			image:      "docker.io/testing/test:latest", imageRef: "testimageref", pulled: map[string]string{"testimageref": recSecret},
			wantRecord: &Credentials{KubernetesSecrets: []Secret{
				{UID: "testsecretuid", Namespace: "default", Name: "pull-secret", CredentialHash: "testsecrethash"},
				{UID: "testsecretuid", Namespace: "differentns", Name: "pull-secret", CredentialHash: "testsecrethash"},
			}},
			want: false, wantCredsAsked: true, wantWrite: true},
		{name: "image exists but the pull is recorded with a different image name but with the exact same secret", policy: NeverVerifyPreloadedImages,
			podSecrets: secret("testsecretuid", "default", "pull-secret", "testsecrethash"),
			image:      "docker.io/testing/different:latest", imageRef: "testimageref", pulled: map[string]string{"testimageref": recSecret},
			want: true},
		{name: "image exists and is recorded with empty credential mapping", policy: NeverVerifyPreloadedImages,
			image: "docker.io/testing/test:latest", imageRef: "testemptycredmapping", pulled: map[string]string{"testemptycredmapping": recEmpty},
			want: true},
		{name: "image does not exist and there are no records of it", policy: NeverVerifyPreloadedImages,
			image: "docker.io/testing/test:latest", imageRef: "", want: true},
		{name: "image exists and there are no records of it with NeverVerifyPreloadedImages pull policy", policy: NeverVerifyPreloadedImages,
			image: "docker.io/testing/test:latest", imageRef: "testexistingref", want: false},
		{name: "image exists and there are no records of it with AlwaysVerify pull policy", policy: AlwaysVerify,
			image: "docker.io/testing/test:latest", imageRef: "testexistingref", want: true},
		{name: "image exists but is only recorded via pulling intent", policy: NeverVerifyPreloadedImages,
			podSecrets: secret("testsecretuid", "default", "pull-secret", "testsecrethash"),
			image:      "docker.io/testing/test:latest", imageRef: "testexistingref",
			pulling: map[string]string{"docker.io/testing/test:latest": intentTest}, want: true},
		{name: "image exists but is only recorded via pulling intent - NeverVerify policy", policy: NeverVerify,
			podSecrets: secret("testsecretuid", "default", "pull-secret", "testsecrethash"),
			image:      "docker.io/testing/test:latest", imageRef: "testexistingref",
			pulling: map[string]string{"docker.io/testing/test:latest": intentTest}, want: false},
		{name: "image exists and is recorded as node-accessible, no pod secrets", policy: NeverVerifyPreloadedImages,
			image: "docker.io/testing/test:latest", imageRef: "testimage-anonpull", pulled: map[string]string{"testimage-anonpull": recAnon},
			want: false},
		{name: "image exists and is recorded as node-accessible, request with pod secrets", policy: NeverVerifyPreloadedImages,
			podSecrets: secret("testsecretuid", "default", "pull-secret", "testsecrethash"),
			image:      "docker.io/testing/test:latest", imageRef: "testimage-anonpull", pulled: map[string]string{"testimage-anonpull": recAnon},
			want: false},
		{name: "image exists and is recorded with empty hash as its hashing originally failed, the same fail for a different pod secret", policy: NeverVerifyPreloadedImages,
			podSecrets: secret("testsecretuid", "differentns", "pull-secret", ""),
			image:      "docker.io/testing/test:latest", imageRef: "test-brokenhash", pulled: map[string]string{"test-brokenhash": recBrokenHash},
			want: true, wantCredsAsked: true},
		{name: "image exists and is recorded with empty hash as its hashing originally failed, the same fail for the same pod secret", policy: NeverVerifyPreloadedImages,
			podSecrets: secret("testsecretuid", "default", "pull-secret", ""),
			image:      "docker.io/testing/test:latest", imageRef: "test-brokenhash", pulled: map[string]string{"test-brokenhash": recBrokenHash},
			want: false, wantCredsAsked: true},
		{name: "image exists and is recorded with pod's exact service account", policy: NeverVerifyPreloadedImages, podSA: sa,
			image: "docker.io/testing/test:latest", imageRef: "testimageref-sa", pulled: map[string]string{"testimageref-sa": recSA},
			want: false, wantCredsAsked: true},
		{name: "image exists and is recorded, no pod service accounts", policy: NeverVerifyPreloadedImages,
			image: "docker.io/testing/test:latest", imageRef: "testimageref", pulled: map[string]string{"testimageref": recSecret},
			want: true, wantCredsAsked: true},
		{name: "image exists and is recorded with a different service account with different UID", policy: NeverVerifyPreloadedImages,
			podSA: &ServiceAccount{UID: "different-sa-uid", Namespace: "default", Name: "test-sa"},
			image: "docker.io/testing/test:latest", imageRef: "testimageref-sa", pulled: map[string]string{"testimageref-sa": recSA},
			want: true, wantCredsAsked: true},
		{name: "image exists and is recorded with a different service account with different namespace", policy: NeverVerifyPreloadedImages,
			podSA: &ServiceAccount{UID: "test-sa-uid", Namespace: "different-ns", Name: "test-sa"},
			image: "docker.io/testing/test:latest", imageRef: "testimageref-sa", pulled: map[string]string{"testimageref-sa": recSA},
			want: true, wantCredsAsked: true},
		{name: "image exists but the pull is recorded with a different image name but with the exact same service account", policy: NeverVerifyPreloadedImages, podSA: sa,
			image: "docker.io/testing/different:latest", imageRef: "testimageref-sa", pulled: map[string]string{"testimageref-sa": recSA},
			want: true},
		{name: "image exists but is only recorded via pulling intent with service account", policy: NeverVerifyPreloadedImages, podSA: sa,
			image: "docker.io/testing/test:latest", imageRef: "testexistingref",
			pulling: map[string]string{"docker.io/testing/test:latest": intentTest}, want: true},
		{name: "image exists but is only recorded via pulling intent with service account - NeverVerify policy", policy: NeverVerify, podSA: sa,
			image: "docker.io/testing/test:latest", imageRef: "testexistingref",
			pulling: map[string]string{"docker.io/testing/test:latest": intentTest}, want: false},
		{name: "image exists and is recorded as node-accessible, request with pod service accounts", policy: NeverVerifyPreloadedImages, podSA: sa,
			image: "docker.io/testing/test:latest", imageRef: "testimage-anonpull", pulled: map[string]string{"testimage-anonpull": recAnon},
			want: false},
		// Beyond kubelet's table: a record kubelet cannot decode means
		// verification; so does the allowlist policy for an image not in
		// it, while an allowlisted one never verifies.
		{name: "undecodable record forces a pull", policy: NeverVerify,
			image: "docker.io/testing/test:latest", imageRef: "broken", pulled: map[string]string{"broken": `{"kind":"ImagePulledRecord",`},
			want: true},
		{name: "allowlisted image needs no verification", policy: NeverVerifyAllowlistedImages,
			image: "docker.io/testing/test:latest", imageRef: "testimageref", pulled: map[string]string{"testimageref": recSecret},
			want: false},
		{name: "image outside the allowlist is verified even when preloaded", policy: NeverVerifyAllowlistedImages,
			image: "docker.io/other/test:latest", imageRef: "testexistingref", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for ref, c := range tt.pulled {
				writeFixture(t, dir, "pulled", ref, c)
			}
			for img, c := range tt.pulling {
				writeFixture(t, dir, "pulling", img, c)
			}
			m, err := New(context.Background(), Config{Dir: dir, Policy: tt.policy, Allowlist: []string{"docker.io/testing/*"}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			asked := false
			got, err := m.MustAttemptImagePull(context.Background(), tt.image, tt.imageRef, func() ([]Secret, *ServiceAccount, error) {
				asked = true
				return tt.podSecrets, tt.podSA, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("MustAttemptImagePull = %v, want %v", got, tt.want)
			}
			if asked != tt.wantCredsAsked {
				t.Errorf("pod credentials looked up: %v, want %v", asked, tt.wantCredsAsked)
			}
			after := snapshot(t, dir)
			// v1alpha1 records are rewritten at New; compare from then.
			if wrote := !reflect.DeepEqual(before, after); wrote != tt.wantWrite {
				t.Errorf("records written: %v, want %v", wrote, tt.wantWrite)
			}
			if tt.wantRecord != nil {
				rec, ok, err := m.Record(tt.imageRef)
				if err != nil || !ok {
					t.Fatalf("Record: %v %v", ok, err)
				}
				if got := rec.CredentialMapping["docker.io/testing/test"]; !reflect.DeepEqual(&got, tt.wantRecord) {
					t.Errorf("record = %+v, want %+v", got, *tt.wantRecord)
				}
			}
		})
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, sub := range []string{"pulled", "pulling"} {
		entries, _ := os.ReadDir(filepath.Join(dir, sub))
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, sub, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[sub+"/"+e.Name()] = string(b)
		}
	}
	return out
}

// Intents are reference counted: the file stays while any pull of the
// image is in flight, and a successful pull writes a record in kubelet's
// format (kubelet's RecordPullIntent and RecordImagePulled tests).
func TestIntentsAndPulledRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, err := New(ctx, Config{Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const image = "docker.io/testing/test:latest"
	intent := filepath.Join(dir, "pulling", fileName(image))
	for range 2 {
		if err := m.RecordPullIntent(image); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(intent)
	if err != nil || strings.TrimSpace(string(b)) != intentTest {
		t.Fatalf("intent file = %q, %v; want %s", b, err, intentTest)
	}
	m.RecordImagePullFailed(ctx, image)
	if _, err := os.Stat(intent); err != nil {
		t.Fatalf("intent removed while a pull is in flight: %v", err)
	}
	// In flight: the image counts as pulled by the manager.
	if must, _ := m.MustAttemptImagePull(ctx, image, "sha256:abc", nil); !must {
		t.Error("an image being pulled is not preloaded")
	}
	creds := &Credentials{KubernetesSecrets: secret("uid1", "default", "pull-secret", "hash1")}
	if err := m.RecordImagePulled(ctx, image, "sha256:abc", creds); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(intent); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("intent left after the last pull: %v", err)
	}
	b, err = os.ReadFile(filepath.Join(dir, "pulled", fileName("sha256:abc")))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","lastUpdatedTime":"*","imageRef":"sha256:abc","credentialMapping":{"docker.io/testing/test":{"kubernetesSecrets":[{"uid":"uid1","namespace":"default","name":"pull-secret","credentialHash":"hash1"}]}}}`
	got := regexp.MustCompile(`"lastUpdatedTime":"[^"]+"`).ReplaceAllString(strings.TrimSpace(string(b)), `"lastUpdatedTime":"*"`)
	if got != want {
		t.Errorf("record = %s\nwant  %s", b, want)
	}
	// Node-wide access replaces secrets; later secrets change nothing.
	_ = m.RecordPullIntent(image)
	_ = m.RecordImagePulled(ctx, image, "sha256:abc", &Credentials{NodePodsAccessible: true})
	_ = m.RecordPullIntent("docker.io/testing/test:v2")
	_ = m.RecordImagePulled(ctx, "docker.io/testing/test:v2", "sha256:abc", creds)
	rec, _, _ := m.Record("sha256:abc")
	if got := rec.CredentialMapping["docker.io/testing/test"]; !got.NodePodsAccessible || len(got.KubernetesSecrets) != 0 {
		t.Errorf("credentials = %+v, want node-accessible only", got)
	}
}

// kubelet's initialize: an intent left by an earlier run whose image is on
// the node becomes a record without credentials, so that the next pod
// verifies; v1alpha1 records are rewritten as v1beta1.
func TestNewTurnsLeftIntentsIntoRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFixture(t, dir, "pulling", "repo.repo/test/test:v1", `{"kind":"ImagePullIntent","apiVersion":"kubelet.config.k8s.io/v1beta1","image":"repo.repo/test/test:v1"}`)
	writeFixture(t, dir, "pulling", "repo.repo/test/gone:v1", `{"kind":"ImagePullIntent","apiVersion":"kubelet.config.k8s.io/v1alpha1","image":"repo.repo/test/gone:v1"}`)
	writeFixture(t, dir, "pulled", "testimageref-sa", recSA)
	lister := listerFunc(func() []*runtimeapi.Image {
		return []*runtimeapi.Image{{Id: "testimageref", RepoTags: []string{"repo.repo/test/test:v1"}}}
	})
	m, err := New(ctx, Config{Dir: dir}, lister)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok, err := m.Record("testimageref")
	if err != nil || !ok || len(rec.CredentialMapping) != 0 {
		t.Fatalf("record = %+v %v %v, want one without credentials", rec, ok, err)
	}
	if ok, _ := m.store.intentExists("repo.repo/test/test:v1"); ok {
		t.Error("intent kept after it became a record")
	}
	if ok, _ := m.store.intentExists("repo.repo/test/gone:v1"); !ok {
		t.Error("intent of an absent image dropped")
	}
	if must, _ := m.MustAttemptImagePull(ctx, "repo.repo/test/test:v1", "testimageref", nil); !must {
		t.Error("an image pulled before a restart, with unknown credentials, needs no verification")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pulled", fileName("testimageref-sa")))
	if !strings.Contains(string(b), `"apiVersion":"kubelet.config.k8s.io/v1beta1"`) {
		t.Errorf("v1alpha1 record not migrated: %s", b)
	}
}

type listerFunc func() []*runtimeapi.Image

func (f listerFunc) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return f(), nil
}

func TestPruneUnknownRecords(t *testing.T) {
	ctx := context.Background()
	m, err := New(ctx, Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"a", "b", "c"} {
		_ = m.RecordPullIntent("img:" + ref)
		_ = m.RecordImagePulled(ctx, "img:"+ref, ref, &Credentials{NodePodsAccessible: true})
	}
	m.PruneUnknownRecords(ctx, []string{"a"}, time.Now().Add(time.Minute))
	for ref, want := range map[string]bool{"a": true, "b": false, "c": false} {
		if _, ok, _ := m.Record(ref); ok != want {
			t.Errorf("record %s kept = %v, want %v", ref, ok, want)
		}
	}
	m.PruneUnknownRecords(ctx, nil, time.Now().Add(-time.Hour))
	if _, ok, _ := m.Record("a"); !ok {
		t.Error("record newer than until pruned")
	}
}

// The cases of kubelet's image_pull_policies_test for the allowlist.
func TestAllowlist(t *testing.T) {
	for _, bad := range [][]string{{" docker.io/a"}, {"*"}, {"/*"}, {"docker.io/*/a"}, {"docker.io/a:tag"}, {"docker.io/a@sha256:" + strings.Repeat("a", 64)}, {""}} {
		if err := ValidateAllowlist(bad); !errors.Is(err, ErrInvalidAllowlist) {
			t.Errorf("ValidateAllowlist(%q) = %v, want ErrInvalidAllowlist", bad, err)
		}
	}
	a, err := newAllowlist([]string{"docker.io/exact", "registry.example.com/team/*"})
	if err != nil {
		t.Fatal(err)
	}
	for image, want := range map[string]bool{
		"docker.io/exact:1": true,
		"docker.io/exact@sha256:" + strings.Repeat("b", 64): true,
		"docker.io/exact/sub":                               false,
		"registry.example.com/team/app:1":                   true,
		"registry.example.com/team/deep/app":                true,
		"registry.example.com/teamx/app":                    false,
		"exact":                                             false, // not normalised, as kubelet
	} {
		if got := a.matches(image); got != want {
			t.Errorf("matches(%q) = %v, want %v", image, got, want)
		}
	}
	if _, err := New(context.Background(), Config{Policy: "Sometimes"}, nil); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("unknown policy: %v", err)
	}
}
