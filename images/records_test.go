package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/credentials"
	"github.com/podstart/podstart/images/pullrecords"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

const (
	privHost  = "registry.example.com"
	privImage = "registry.example.com/team/app:1.0"
	privUser  = "ci"
	privPass  = "s3cret-Pa55word"
)

func regSecret(ns, name, uid, user, pass string) corev1.Secret {
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(
			`{"auths":{"` + privHost + `":{"username":"` + user + `","password":"` + pass + `"}}}`)},
	}
}

func podFor(uid, image string, policy corev1.PullPolicy) (*corev1.Pod, *corev1.Container) {
	p, c := testPod(image, policy)
	p.UID = types.UID(uid)
	return p, c
}

type recordsEnv struct {
	t    *testing.T
	rt   *fake.Runtime
	dir  string
	rec  *recorder
	m    *Manager
	recs *pullrecords.Manager
}

func newRecordsEnv(t *testing.T, cfg pullrecords.Config, rt *fake.Runtime, opts ...Option) *recordsEnv {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	recs, err := pullrecords.New(context.Background(), cfg, rt)
	if err != nil {
		t.Fatal(err)
	}
	e := &recordsEnv{t: t, rt: rt, dir: cfg.Dir, rec: &recorder{}, recs: recs}
	e.m = NewManager(rt, append([]Option{WithRecorder(e.rec), WithPullRecords(recs), WithBackOff(0, 0)}, opts...)...)
	t.Cleanup(func() { e.m.Close() })
	return e
}

func (e *recordsEnv) ensure(uid, image string, policy corev1.PullPolicy, secrets ...corev1.Secret) (string, string, error) {
	pod, c := podFor(uid, image, policy)
	return e.m.EnsureImageExists(context.Background(), pod, c, secrets, nil)
}

func privateRuntime(opts ...fake.Option) *fake.Runtime {
	return fake.New(append([]fake.Option{fake.WithRegistryAuth(privHost, privUser, privPass)}, opts...)...)
}

// The KEP's story under kubelet's default policy: pod A pulls the private
// image with its secret; pod B, without it, is not given the image but
// re-pulls with its own (no) credentials and fails; the same secret, or
// another secret with the same credential, lets a pod use the image with
// no pull.
func TestEnsureSecretPulledImageDefaultPolicy(t *testing.T) {
	t.Parallel()
	e := newRecordsEnv(t, pullrecords.Config{}, privateRuntime())
	secretA := regSecret("team-a", "regcred", "uid-secret-a", privUser, privPass)

	refA, _, err := e.ensure("pod-a", privImage, corev1.PullIfNotPresent, secretA)
	if err != nil {
		t.Fatalf("pod A: %v", err)
	}

	e.rt.ResetCalls()
	e.rec.reset()
	_, msg, err := e.ensure("pod-b", privImage, corev1.PullIfNotPresent)
	if !errors.Is(err, ErrImagePull) || !errors.Is(err, runtime.ErrUnauthorized) {
		t.Fatalf("pod B without the secret: %v (%s), want ErrImagePull and ErrUnauthorized", err, msg)
	}
	if n := e.rt.CallCount("PullImage"); n != 1 {
		t.Errorf("pod B: %d pulls, want 1 (the verification)", n)
	}
	if got := e.rec.reasons(); strings.Join(got, ",") != "Pulling,Failed" {
		t.Errorf("pod B events = %v, want Pulling, Failed", got)
	}

	// Pod B's Never container: the image's presence is not revealed.
	e.rt.ResetCalls()
	e.rec.reset()
	_, msg, err = e.ensure("pod-b2", privImage, corev1.PullNever)
	if !errors.Is(err, ErrImageNeverPull) || msg != `Container image "`+privImage+`" is not present with pull policy of Never` {
		t.Errorf("pod B, Never: %v %q", err, msg)
	}
	if e.rt.CallCount("PullImage") != 0 || strings.Join(e.rec.reasons(), ",") != EventErrImageNeverPull {
		t.Errorf("pod B, Never: pulls %d, events %v", e.rt.CallCount("PullImage"), e.rec.events)
	}

	// The same secret, and another secret with the same credential: no pull.
	for _, tc := range []struct {
		uid    string
		secret corev1.Secret
	}{
		{"pod-a2", secretA},
		{"pod-c", regSecret("team-c", "other", "uid-secret-c", privUser, privPass)},
	} {
		e.rt.ResetCalls()
		ref, msg, err := e.ensure(tc.uid, privImage, corev1.PullNever, tc.secret)
		if err != nil || ref != refA || msg != `Container image "`+privImage+`" already present on machine and can be accessed by the pod` {
			t.Errorf("%s: %q %q %v", tc.uid, ref, msg, err)
		}
		if e.rt.CallCount("PullImage") != 0 {
			t.Errorf("%s pulled", tc.uid)
		}
	}
	// Pod C's secret matched by hash and was added to the record.
	rec, ok, err := e.recs.Record(refA)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	got := rec.CredentialMapping["registry.example.com/team/app"].KubernetesSecrets
	if len(got) != 2 || got[0].Namespace != "team-a" || got[1].Namespace != "team-c" || got[0].CredentialHash != got[1].CredentialHash || got[0].UID != "uid-secret-a" {
		t.Errorf("record secrets = %+v", got)
	}

	// A wrong password in a known secret is refused by the registry.
	_, _, err = e.ensure("pod-d", privImage, corev1.PullIfNotPresent, regSecret("team-d", "regcred", "uid-secret-d", privUser, "wrong"))
	if !errors.Is(err, runtime.ErrUnauthorized) {
		t.Errorf("pod D with a wrong password: %v", err)
	}
	assertNoSecret(t, e)
}

// assertNoSecret checks that no password reached a record, an event or an
// intent.
func assertNoSecret(t *testing.T, e *recordsEnv) {
	t.Helper()
	_ = filepath.WalkDir(e.dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), privPass) || strings.Contains(string(b), "wrong") {
			t.Errorf("%s holds a password: %s", path, b)
		}
		return nil
	})
	for _, ev := range e.rec.events {
		if strings.Contains(ev, privPass) {
			t.Errorf("event holds the password: %s", ev)
		}
	}
}

// Under NeverVerify any pod may use a present image (kubelet's
// NeverVerify); pulls are still recorded.
func TestEnsureSecretPulledImageNeverVerify(t *testing.T) {
	t.Parallel()
	e := newRecordsEnv(t, pullrecords.Config{Policy: pullrecords.NeverVerify}, privateRuntime())
	if _, _, err := e.ensure("pod-a", privImage, corev1.PullIfNotPresent, regSecret("a", "s", "u", privUser, privPass)); err != nil {
		t.Fatal(err)
	}
	e.rt.ResetCalls()
	ref, msg, err := e.ensure("pod-b", privImage, corev1.PullIfNotPresent)
	if err != nil || ref == "" || !strings.HasSuffix(msg, "already present on machine and can be accessed by the pod") {
		t.Fatalf("pod B: %q %q %v", ref, msg, err)
	}
	if e.rt.CallCount("PullImage") != 0 {
		t.Error("pod B pulled")
	}
}

// Preloaded images (on the node with no record and no intent) need no
// verification under NeverVerifyPreloadedImages, and do under
// AlwaysVerify; under NeverVerifyAllowlistedImages only the allowlist is
// exempt.
func TestEnsureSecretPulledImagePreloaded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy    pullrecords.Policy
		allowlist []string
		wantPull  bool
	}{
		{pullrecords.NeverVerifyPreloadedImages, nil, false},
		{pullrecords.AlwaysVerify, nil, true},
		{pullrecords.NeverVerifyAllowlistedImages, []string{"registry.example.com/team/*"}, false},
		{pullrecords.NeverVerifyAllowlistedImages, []string{"registry.example.com/other"}, true},
	} {
		t.Run(string(tc.policy)+strings.Join(tc.allowlist, ","), func(t *testing.T) {
			e := newRecordsEnv(t, pullrecords.Config{Policy: tc.policy, Allowlist: tc.allowlist}, privateRuntime(fake.WithImages(privImage)))
			_, _, err := e.ensure("pod-b", privImage, corev1.PullIfNotPresent)
			if pulled := e.rt.CallCount("PullImage") > 0; pulled != tc.wantPull {
				t.Errorf("pulled = %v, want %v (err %v)", pulled, tc.wantPull, err)
			}
			if tc.wantPull != (err != nil) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

// An anonymous pull, or one with the node's credentials, is recorded as
// accessible to every pod on the node (kubelet's NodePodsAccessible).
func TestEnsureSecretPulledImageNodeAccessible(t *testing.T) {
	t.Parallel()
	t.Run("anonymous", func(t *testing.T) {
		e := newRecordsEnv(t, pullrecords.Config{Policy: pullrecords.AlwaysVerify}, fake.New())
		ref, _, err := e.ensure("pod-a", "docker.io/library/busybox:1", corev1.PullIfNotPresent)
		if err != nil {
			t.Fatal(err)
		}
		if rec, _, _ := e.recs.Record(ref); !rec.CredentialMapping["docker.io/library/busybox"].NodePodsAccessible {
			t.Errorf("record = %+v", rec)
		}
		e.rt.ResetCalls()
		if _, _, err := e.ensure("pod-b", "docker.io/library/busybox:1", corev1.PullNever); err != nil || e.rt.CallCount("PullImage") != 0 {
			t.Errorf("pod B: %v, %d pulls", err, e.rt.CallCount("PullImage"))
		}
	})
	t.Run("node keyring", func(t *testing.T) {
		node := &credentials.BasicKeyring{}
		node.Add(credentials.DockerConfig{privHost: {Username: privUser, Password: privPass}})
		e := newRecordsEnv(t, pullrecords.Config{}, privateRuntime(), WithNodeKeyring(node))
		ref, _, err := e.ensure("pod-a", privImage, corev1.PullIfNotPresent)
		if err != nil {
			t.Fatal(err)
		}
		if rec, _, _ := e.recs.Record(ref); !rec.CredentialMapping["registry.example.com/team/app"].NodePodsAccessible {
			t.Errorf("record = %+v", rec)
		}
		if _, _, err := e.ensure("pod-b", privImage, corev1.PullNever); err != nil {
			t.Errorf("pod B: %v", err)
		}
	})
}

// Records outlive the manager: a new one on the same directory still
// refuses pod B, and an intent left by a pull that never finished marks
// the image as pulled by the manager, so it is not treated as preloaded.
func TestEnsureSecretPulledImageRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rt := privateRuntime()
	e := newRecordsEnv(t, pullrecords.Config{Dir: dir}, rt)
	if _, _, err := e.ensure("pod-a", privImage, corev1.PullIfNotPresent, regSecret("a", "s", "u", privUser, privPass)); err != nil {
		t.Fatal(err)
	}
	e.m.Close()
	e2 := newRecordsEnv(t, pullrecords.Config{Dir: dir}, rt)
	if _, _, err := e2.ensure("pod-b", privImage, corev1.PullNever); !errors.Is(err, ErrImageNeverPull) {
		t.Errorf("after restart, pod B: %v", err)
	}

	// A pull interrupted by a crash: the intent stays, the image landed.
	dir2 := t.TempDir()
	rt2 := privateRuntime(fake.WithImages(privImage))
	crashed, err := pullrecords.New(context.Background(), pullrecords.Config{Dir: dir2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := crashed.RecordPullIntent(privImage); err != nil {
		t.Fatal(err)
	}
	e3 := newRecordsEnv(t, pullrecords.Config{Dir: dir2}, rt2)
	if _, _, err := e3.ensure("pod-b", privImage, corev1.PullNever); !errors.Is(err, ErrImageNeverPull) {
		t.Errorf("image with an unfinished intent treated as preloaded: %v", err)
	}
	if _, _, err := e3.ensure("pod-a", privImage, corev1.PullIfNotPresent, regSecret("a", "s", "u", privUser, privPass)); err != nil {
		t.Errorf("pod A re-verifies: %v", err)
	}
	if _, _, err := e3.ensure("pod-a2", privImage, corev1.PullNever, regSecret("a", "s", "u", privUser, privPass)); err != nil {
		t.Errorf("pod A after verifying: %v", err)
	}
}

// A failed pull, and a pull refused by back-off, end their intent (kubelet
// defers RecordImagePullFailed around the back-off check too).
func TestEnsureSecretPulledImageIntentsEnd(t *testing.T) {
	t.Parallel()
	e := newRecordsEnv(t, pullrecords.Config{}, privateRuntime(), WithBackOff(DefaultBackOffInitial, DefaultBackOffMax))
	for i := 0; i < 2; i++ {
		_, _, err := e.ensure("pod-b", privImage, corev1.PullAlways)
		want := ErrImagePull
		if i == 1 {
			want = ErrImagePullBackOff
		}
		if !errors.Is(err, want) {
			t.Fatalf("attempt %d: %v, want %v", i, err, want)
		}
		entries, _ := os.ReadDir(filepath.Join(e.dir, "pulling"))
		if len(entries) != 0 {
			t.Errorf("attempt %d left %d intents", i, len(entries))
		}
	}
}

// An intent that cannot be written stops the pull, with kubelet's message.
func TestEnsureSecretPulledImageIntentWriteFails(t *testing.T) {
	t.Parallel()
	e := newRecordsEnv(t, pullrecords.Config{}, fake.New())
	// A file where the directory should be fails even for root.
	pulling := filepath.Join(e.dir, "pulling")
	if err := os.Remove(pulling); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pulling, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, msg, err := e.ensure("pod-a", "busybox", corev1.PullAlways)
	if !errors.Is(err, pullrecords.ErrRecordIntent) || !strings.HasPrefix(msg, `Failed to record image pull intent for container image "busybox"`) {
		t.Errorf("%v %q", err, msg)
	}
	if e.rt.CallCount("PullImage") != 0 {
		t.Error("pulled without an intent")
	}
}

// The credential hash is kubelet's hashAuthConfig: the hex SHA-256 of the
// AuthConfig's JSON with kubelet's field names, empty fields left out.
func TestCredentialHashIsKubelets(t *testing.T) {
	sum := sha256.Sum256([]byte(`{"username":"user","password":"pass","email":"a@b"}`))
	if got, want := credentialHash(credentials.AuthConfig{Username: "user", Password: "pass", Email: "a@b",
		Source: credentials.Source{Kind: credentials.SourceSecret, Name: "x"}}), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("hash = %s, want %s", got, want)
	}
}

// What the pod brings and what a pull is recorded with, per credential
// source (kubelet's getPodCredentials and trackedToImagePullCreds).
func TestRecordedCredentialSources(t *testing.T) {
	sa := credentials.ServiceAccountRef{Namespace: "ns", Name: "sa", UID: "sa-uid"}
	creds := []credentials.AuthConfig{
		{Username: "u", Password: "p", Source: credentials.Source{Kind: credentials.SourceSecret, Namespace: "ns", Name: "s1", UID: "s1-uid"}},
		{Username: "t", Password: "tok", Source: credentials.Source{Kind: credentials.SourcePlugin, Name: "plugin", ServiceAccount: sa}},
		{Username: "t2", Password: "tok2", Source: credentials.Source{Kind: credentials.SourcePlugin, Name: "plugin2", ServiceAccount: credentials.ServiceAccountRef{Namespace: "ns", Name: "other"}}},
		{Username: "n", Password: "np", Source: credentials.Source{Kind: credentials.SourceNodeFile, Path: "/root/.docker/config.json"}},
		{Username: "q", Password: "qp", Source: credentials.Source{Kind: credentials.SourcePlugin, Name: "plain-plugin"}},
	}
	secrets, gotSA := podCredentials(creds)
	if len(secrets) != 1 || secrets[0].Name != "s1" || secrets[0].UID != "s1-uid" || secrets[0].CredentialHash != credentialHash(creds[0]) {
		t.Errorf("secrets = %+v", secrets)
	}
	if gotSA == nil || *gotSA != (pullrecords.ServiceAccount{UID: "sa-uid", Namespace: "ns", Name: "sa"}) {
		t.Errorf("service account = %+v, want the first", gotSA)
	}
	for i, want := range []string{"secret", "sa", "sa", "node", "node"} {
		c := pullCredentials(creds, i)
		got := "node"
		switch {
		case len(c.KubernetesSecrets) == 1 && !c.NodePodsAccessible:
			got = "secret"
		case len(c.KubernetesServiceAccounts) == 1 && !c.NodePodsAccessible:
			got = "sa"
		case !c.NodePodsAccessible:
			got = "?"
		}
		if got != want {
			t.Errorf("credential %d recorded as %s, want %s", i, got, want)
		}
	}
	if c := pullCredentials(creds, -1); !c.NodePodsAccessible {
		t.Errorf("anonymous pull recorded as %+v", c)
	}
}

// Two pods with different secrets holding the same credential share one
// runtime pull; each records its own secret.
func TestEnsureSecretPulledImageSharedPull(t *testing.T) {
	t.Parallel()
	rt := privateRuntime()
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	rt.Intercept(func(ctx context.Context, method string, _ proto.Message) error {
		if method == "PullImage" {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	e := newRecordsEnv(t, pullrecords.Config{}, rt)
	errs := make(chan error, 2)
	for _, s := range []corev1.Secret{regSecret("ns1", "s1", "uid1", privUser, privPass), regSecret("ns2", "s2", "uid2", privUser, privPass)} {
		go func() {
			_, _, err := e.ensure("pod-"+s.Name, privImage, corev1.PullAlways, s)
			errs <- err
		}()
	}
	<-entered
	for e.m.waiters(privImage) < 2 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := rt.CallCount("PullImage"); n != 1 {
		t.Fatalf("%d pulls, want 1 shared", n)
	}
	st, _ := rt.ImageStatus(context.Background(), &runtimeapi.ImageSpec{Image: privImage}, false)
	rec, _, _ := e.recs.Record(st.GetImage().GetId())
	got := rec.CredentialMapping["registry.example.com/team/app"].KubernetesSecrets
	if len(got) != 2 || got[0].Name != "s1" || got[1].Name != "s2" {
		t.Errorf("recorded secrets = %+v, want s1 and s2", got)
	}
}

// saKeyring is a node keyring that answers per pod, as a credential
// provider plugin in service-account token mode: the registry credential,
// sourced from the pod's service account.
type saKeyring struct{}

func (saKeyring) Lookup(string) ([]credentials.AuthConfig, bool) { return nil, false }

func (saKeyring) ForPod(_ context.Context, pod credentials.PodRef) credentials.Keyring {
	return saPodKeyring(pod.ServiceAccountName)
}

type saPodKeyring string

func (k saPodKeyring) Lookup(string) ([]credentials.AuthConfig, bool) {
	if k == "" {
		return nil, false
	}
	return []credentials.AuthConfig{{Username: privUser, Password: privPass, Source: credentials.Source{
		Kind: credentials.SourcePlugin, Name: "plugin",
		ServiceAccount: credentials.ServiceAccountRef{Namespace: "shop", Name: string(k), UID: "uid-" + string(k)}}}}, true
}

// A pull made with a plugin's service-account credential is recorded
// under the service account; a pod of the same service account may use
// the image, a pod of another one verifies (and here succeeds, the
// plugin giving it a credential too), a pod with none fails.
func TestEnsureSecretPulledImageServiceAccount(t *testing.T) {
	t.Parallel()
	e := newRecordsEnv(t, pullrecords.Config{}, privateRuntime(), WithNodeKeyring(saKeyring{}))
	ensure := func(uid, sa string) error {
		pod, c := podFor(uid, privImage, corev1.PullIfNotPresent)
		pod.Spec.ServiceAccountName = sa
		_, _, err := e.m.EnsureImageExists(context.Background(), pod, c, nil, nil)
		return err
	}
	if err := ensure("pod-a", "builder"); err != nil {
		t.Fatal(err)
	}
	st, _ := e.rt.ImageStatus(context.Background(), &runtimeapi.ImageSpec{Image: privImage}, false)
	rec, _, _ := e.recs.Record(st.GetImage().GetId())
	want := []pullrecords.ServiceAccount{{UID: "uid-builder", Namespace: "shop", Name: "builder"}}
	if got := rec.CredentialMapping["registry.example.com/team/app"].KubernetesServiceAccounts; !reflect.DeepEqual(got, want) {
		t.Fatalf("recorded service accounts = %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		uid, sa   string
		wantPulls int
		wantErr   bool
	}{
		{"pod-a2", "builder", 0, false},
		{"pod-b", "deployer", 1, false},
		{"pod-c", "", 1, true},
	} {
		e.rt.ResetCalls()
		err := ensure(tc.uid, tc.sa)
		if (err != nil) != tc.wantErr || e.rt.CallCount("PullImage") != tc.wantPulls {
			t.Errorf("%s (service account %q): %v, %d pulls; want error %v, %d pulls", tc.uid, tc.sa, err, e.rt.CallCount("PullImage"), tc.wantErr, tc.wantPulls)
		}
	}
}
