package apiobjects

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/mounts"
)

// keyCase is a case of kubelet's secret and configmap TestMakePayload
// (and projected TestCollectDataWith{Secret,ConfigMap}, the same table).
type keyCase struct {
	name     string
	items    []corev1.KeyToPath
	mode     int32
	optional bool
	want     map[string]mounts.File // nil: fails
	wantErr  string                 // kubelet's message, "%s" for secret or configmap
}

func keyCases() []keyCase {
	m0400 := int32(0o400)
	file := func(data string, mode fs.FileMode) mounts.File { return mounts.File{Data: []byte(data), Mode: mode} }
	return []keyCase{
		{name: "no overrides", mode: 0o644, want: map[string]mounts.File{"foo": file("foo", 0o644), "bar": file("bar", 0o644)}},
		{name: "basic 1", items: []corev1.KeyToPath{{Key: "foo", Path: "path/to/foo.txt"}}, mode: 0o644,
			want: map[string]mounts.File{"path/to/foo.txt": file("foo", 0o644)}},
		{name: "subdirs", items: []corev1.KeyToPath{{Key: "foo", Path: "path/to/1/2/3/foo.txt"}}, mode: 0o644,
			want: map[string]mounts.File{"path/to/1/2/3/foo.txt": file("foo", 0o644)}},
		{name: "subdirs 3", items: []corev1.KeyToPath{{Key: "foo", Path: "path/to/1/2/3/foo.txt"}, {Key: "bar", Path: "another/path/to/the/esteemed/bar.bin"}}, mode: 0o644,
			want: map[string]mounts.File{"path/to/1/2/3/foo.txt": file("foo", 0o644), "another/path/to/the/esteemed/bar.bin": file("bar", 0o644)}},
		{name: "non existent key", items: []corev1.KeyToPath{{Key: "zab", Path: "path/to/foo.txt"}}, mode: 0o644,
			wantErr: "%s zab"},
		{name: "mapping with Mode", items: []corev1.KeyToPath{{Key: "foo", Path: "foo.txt", Mode: &m0400}, {Key: "bar", Path: "bar.bin", Mode: &m0400}}, mode: 0o644,
			want: map[string]mounts.File{"foo.txt": file("foo", 0o400), "bar.bin": file("bar", 0o400)}},
		{name: "mapping with defaultMode", items: []corev1.KeyToPath{{Key: "foo", Path: "foo.txt"}, {Key: "bar", Path: "bar.bin"}}, mode: 0o644,
			want: map[string]mounts.File{"foo.txt": file("foo", 0o644), "bar.bin": file("bar", 0o644)}},
		{name: "optional non existent key", items: []corev1.KeyToPath{{Key: "zab", Path: "path/to/foo.txt"}}, mode: 0o644, optional: true,
			want: map[string]mounts.File{}},
	}
}

func checkPayload(t *testing.T, got map[string]mounts.File, err error, want map[string]mounts.File, wantErr string) {
	t.Helper()
	if want == nil {
		if err == nil || err.Error() != wantErr {
			t.Fatalf("err = %v, want %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("payload\n got %s\nwant %s", showPayload(got), showPayload(want))
	}
}

func showPayload(m map[string]mounts.File) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		f := m[k]
		fmt.Fprintf(&b, "%s=%q(%v,fsUser %d) ", k, f.Data, f.Mode, ptr.Deref(f.FsUser, -1))
	}
	return b.String()
}

func TestSecretPayload(t *testing.T) {
	for _, tc := range keyCases() {
		t.Run(tc.name, func(t *testing.T) {
			s := &corev1.Secret{Data: map[string][]byte{"foo": []byte("foo"), "bar": []byte("bar")}}
			got, err := SecretPayload(tc.items, s, &tc.mode, tc.optional)
			checkPayload(t, got, err, tc.want, strings.Replace(tc.wantErr, "%s", "references non-existent secret key:", 1))
			if tc.want == nil && !errors.Is(err, ErrVolumeKeyMissing) {
				t.Errorf("%v is not ErrVolumeKeyMissing", err)
			}
		})
	}
	if _, err := SecretPayload(nil, &corev1.Secret{}, nil, false); !errors.Is(err, ErrNoDefaultMode) || err.Error() != "no defaultMode used, not even the default value for it" {
		t.Errorf("no defaultMode: %v", err)
	}
}

func TestConfigMapPayload(t *testing.T) {
	for _, tc := range keyCases() {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{Data: map[string]string{"foo": "foo", "bar": "bar"}}
			got, err := ConfigMapPayload(tc.items, cm, &tc.mode, tc.optional)
			checkPayload(t, got, err, tc.want, strings.Replace(tc.wantErr, "%s", "configmap references non-existent config key:", 1))
		})
	}
	mode := int32(0o644)
	for _, tc := range []struct {
		name  string
		cm    *corev1.ConfigMap
		items []corev1.KeyToPath
		want  map[string]mounts.File
	}{
		{"no overrides binary data", &corev1.ConfigMap{BinaryData: map[string][]byte{"foo": []byte("foo"), "bar": []byte("bar")}}, nil,
			map[string]mounts.File{"foo": {Data: []byte("foo"), Mode: 0o644}, "bar": {Data: []byte("bar"), Mode: 0o644}}},
		{"no overrides mixed data", &corev1.ConfigMap{BinaryData: map[string][]byte{"foo": []byte("foo")}, Data: map[string]string{"bar": "bar"}}, nil,
			map[string]mounts.File{"foo": {Data: []byte("foo"), Mode: 0o644}, "bar": {Data: []byte("bar"), Mode: 0o644}}},
		// A key in both: BinaryData's for all keys, Data's for an item
		// (kubelet's order of lookups).
		{"key in both, all keys", &corev1.ConfigMap{BinaryData: map[string][]byte{"k": []byte("binary")}, Data: map[string]string{"k": "text"}}, nil,
			map[string]mounts.File{"k": {Data: []byte("binary"), Mode: 0o644}}},
		{"key in both, item", &corev1.ConfigMap{BinaryData: map[string][]byte{"k": []byte("binary")}, Data: map[string]string{"k": "text"}}, []corev1.KeyToPath{{Key: "k", Path: "p"}},
			map[string]mounts.File{"p": {Data: []byte("text"), Mode: 0o644}}},
		{"binary item", &corev1.ConfigMap{BinaryData: map[string][]byte{"k": {0, 1}}}, []corev1.KeyToPath{{Key: "k", Path: "p"}},
			map[string]mounts.File{"p": {Data: []byte{0, 1}, Mode: 0o644}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConfigMapPayload(tc.items, tc.cm, &mode, false)
			checkPayload(t, got, err, tc.want, "")
		})
	}
}

const (
	testNamespace = "test_projected_namespace"
	testPodName   = "podName"
)

func downwardPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: testPodName, Namespace: testNamespace, UID: "test_pod_uid",
			Labels:      map[string]string{"key1": "value1", "key2": "value2"},
			Annotations: map[string]string{"a1": "value1", "a2": "value2", "multiline": "c\nb\na"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi"), "hugepages-2Mi": resource.MustParse("4Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi"), corev1.ResourceCPU: resource.MustParse("0")},
			}}},
			InitContainers: []corev1.Container{{Name: "init"}},
		},
	}
}

// Kubelet's downwardapi TestDownwardAPI and projected
// TestCollectDataWithDownwardAPI, with resource fields.
func TestDownwardAPIPayload(t *testing.T) {
	m0400 := int32(0o400)
	field := func(path, fieldPath string) corev1.DownwardAPIVolumeFile {
		return corev1.DownwardAPIVolumeFile{Path: path, FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}
	}
	res := func(path, container, r, divisor string) corev1.DownwardAPIVolumeFile {
		f := corev1.DownwardAPIVolumeFile{Path: path, ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: container, Resource: r}}
		if divisor != "" {
			f.ResourceFieldRef.Divisor = resource.MustParse(divisor)
		}
		return f
	}
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	for _, tc := range []struct {
		name    string
		items   []corev1.DownwardAPIVolumeFile
		want    map[string]string // path → content, mode 0644
		modes   map[string]fs.FileMode
		wantErr string
	}{
		{name: "labels", items: []corev1.DownwardAPIVolumeFile{field("labels", "metadata.labels")}, want: map[string]string{"labels": "key1=\"value1\"\nkey2=\"value2\""}},
		{name: "annotations", items: []corev1.DownwardAPIVolumeFile{field("annotations", "metadata.annotations")},
			want: map[string]string{"annotations": "a1=\"value1\"\na2=\"value2\"\nmultiline=\"c\\nb\\na\""}},
		{name: "annotation", items: []corev1.DownwardAPIVolumeFile{field("annotation", "metadata.annotations['a1']")}, want: map[string]string{"annotation": "value1"}},
		{name: "label", items: []corev1.DownwardAPIVolumeFile{field("l", "metadata.labels['key2']")}, want: map[string]string{"l": "value2"}},
		{name: "name", items: []corev1.DownwardAPIVolumeFile{field("name_file_name", "metadata.name")}, want: map[string]string{"name_file_name": testPodName}},
		{name: "namespace", items: []corev1.DownwardAPIVolumeFile{field("namespace_file_name", "metadata.namespace")}, want: map[string]string{"namespace_file_name": testNamespace}},
		{name: "uid", items: []corev1.DownwardAPIVolumeFile{field("uid", "metadata.uid")}, want: map[string]string{"uid": "test_pod_uid"}},
		{name: "unix path", items: []corev1.DownwardAPIVolumeFile{field("these/are/my/labels", "metadata.labels")}, want: map[string]string{"these/are/my/labels": "key1=\"value1\"\nkey2=\"value2\""}},
		{name: "two consecutive slashes", items: []corev1.DownwardAPIVolumeFile{field("this//labels", "metadata.labels")}, want: map[string]string{"this/labels": "key1=\"value1\"\nkey2=\"value2\""}},
		{name: "item mode", items: []corev1.DownwardAPIVolumeFile{{Path: "name_file_name", Mode: &m0400, FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			want: map[string]string{"name_file_name": testPodName}, modes: map[string]fs.FileMode{"name_file_name": 0o400}},
		{name: "no source", items: []corev1.DownwardAPIVolumeFile{{Path: "empty"}}, want: map[string]string{"empty": ""}},
		{name: "cpu request in millicores", items: []corev1.DownwardAPIVolumeFile{res("cpu", "app", "requests.cpu", "1m")}, want: map[string]string{"cpu": "250"}},
		{name: "cpu request rounded up", items: []corev1.DownwardAPIVolumeFile{res("cpu", "app", "requests.cpu", "")}, want: map[string]string{"cpu": "1"}},
		{name: "zero cpu limit is allocatable", items: []corev1.DownwardAPIVolumeFile{res("cpu", "app", "limits.cpu", "")}, want: map[string]string{"cpu": "4"}},
		{name: "memory limit in Mi", items: []corev1.DownwardAPIVolumeFile{res("mem", "app", "limits.memory", "1Mi")}, want: map[string]string{"mem": "128"}},
		{name: "missing limit is allocatable", items: []corev1.DownwardAPIVolumeFile{res("eph", "app", "limits.ephemeral-storage", "1Gi")}, want: map[string]string{"eph": "100"}},
		{name: "init container", items: []corev1.DownwardAPIVolumeFile{res("mem", "init", "limits.memory", "1Gi")}, want: map[string]string{"mem": "8"}},
		{name: "hugepages request", items: []corev1.DownwardAPIVolumeFile{res("hp", "app", "requests.hugepages-2Mi", "1Mi")}, want: map[string]string{"hp": "4"}},
		{name: "missing request is zero", items: []corev1.DownwardAPIVolumeFile{res("eph", "init", "requests.ephemeral-storage", "")}, want: map[string]string{"eph": "0"}},

		{name: "annotation-error", items: []corev1.DownwardAPIVolumeFile{field("annotation", "metadata.annotations['']")},
			wantErr: "invalid key subscript in metadata.annotations['']: name part must be non-empty;name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"},
		{name: "subscript of name", items: []corev1.DownwardAPIVolumeFile{field("x", "metadata.name['x']")}, wantErr: `fieldPath "metadata.name['x']" does not support subscript`},
		{name: "env-only field", items: []corev1.DownwardAPIVolumeFile{field("x", "spec.nodeName")}, wantErr: "unsupported fieldPath: spec.nodeName"},
		{name: "unknown container", items: []corev1.DownwardAPIVolumeFile{res("x", "nope", "limits.cpu", "")}, wantErr: "container nope not found"},
		{name: "unknown resource", items: []corev1.DownwardAPIVolumeFile{res("x", "app", "limits.gpu", "")}, wantErr: "unsupported container resource : limits.gpu"},
		{name: "errors aggregated", items: []corev1.DownwardAPIVolumeFile{field("a", "spec.nodeName"), field("ok", "metadata.name"), res("b", "nope", "limits.cpu", "")},
			wantErr: "[unsupported fieldPath: spec.nodeName, container nope not found]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mode := int32(0o644)
			got, err := DownwardAPIPayload(tc.items, downwardPod(), allocatable, &mode)
			var want map[string]mounts.File
			if tc.want != nil {
				want = map[string]mounts.File{}
				for p, s := range tc.want {
					m, ok := tc.modes[p]
					if !ok {
						m = 0o644
					}
					f := mounts.File{Mode: m}
					if tc.name != "no source" {
						f.Data = []byte(s)
					}
					want[p] = f
				}
			}
			checkPayload(t, got, err, want, tc.wantErr)
		})
	}
	if _, err := DownwardAPIPayload(nil, downwardPod(), nil, nil); !errors.Is(err, ErrNoDefaultMode) {
		t.Errorf("no defaultMode: %v", err)
	}
}

func TestFormatMap(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{"b": "2", "a": "1"}, "a=\"1\"\nb=\"2\""},
		{map[string]string{"q": "say \"hi\"\t\u00e9\x00"}, `q="say \"hi\"\t` + "\u00e9" + `\x00"`},
	} {
		if got := FormatMap(tc.in); got != tc.want {
			t.Errorf("FormatMap(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// kubelet's FsUserFrom: the one runAsUser of all containers, or none.
func TestFsUser(t *testing.T) {
	sc := func(u int64) *corev1.SecurityContext { return &corev1.SecurityContext{RunAsUser: &u} }
	for _, tc := range []struct {
		name string
		pod  corev1.PodSpec
		want *int64
	}{
		{"no containers", corev1.PodSpec{}, nil},
		{"no user", corev1.PodSpec{Containers: []corev1.Container{{}}}, nil},
		{"pod level", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}, Containers: []corev1.Container{{}, {}}}, ptr.To[int64](1000)},
		{"same in all", corev1.PodSpec{InitContainers: []corev1.Container{{SecurityContext: sc(7)}}, Containers: []corev1.Container{{SecurityContext: sc(7)}}}, ptr.To[int64](7)},
		{"container overrides pod", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}, Containers: []corev1.Container{{SecurityContext: sc(7)}, {SecurityContext: sc(7)}}}, ptr.To[int64](7)},
		{"two users", corev1.PodSpec{Containers: []corev1.Container{{SecurityContext: sc(7)}, {SecurityContext: sc(8)}}}, nil},
		{"one without", corev1.PodSpec{Containers: []corev1.Container{{SecurityContext: sc(7)}, {}}}, nil},
		{"ephemeral differs", corev1.PodSpec{Containers: []corev1.Container{{SecurityContext: sc(7)}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{SecurityContext: sc(0)}}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FsUser(&corev1.Pod{Spec: tc.pod}); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("FsUser = %v, want %v", ptr.Deref(got, -1), ptr.Deref(tc.want, -1))
			}
		})
	}
}

// kubelet's projected TestCollectDataWith{Secret,ConfigMap}: the same
// table through a projected volume.
func TestProjectedPayloadSecretAndConfigMap(t *testing.T) {
	for _, kind := range []string{"secret", "configmap"} {
		for _, tc := range keyCases() {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				src := newTestSource(
					&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "obj"}, Data: map[string][]byte{"foo": []byte("foo"), "bar": []byte("bar")}},
					&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "obj"}, Data: map[string]string{"foo": "foo", "bar": "bar"}})
				proj := corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "obj"}, Items: tc.items, Optional: &tc.optional}}
				msg := "references non-existent secret key:"
				if kind == "configmap" {
					proj = corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "obj"}, Items: tc.items, Optional: &tc.optional}}
					msg = "configmap references non-existent config key:"
				}
				got, err := ProjectedPayload(context.Background(), Projection{
					Pod:     &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, UID: "test_pod_uid"}},
					Source:  &corev1.ProjectedVolumeSource{DefaultMode: &tc.mode, Sources: []corev1.VolumeProjection{proj}},
					Objects: src,
				})
				checkPayload(t, got, err, tc.want, strings.Replace(tc.wantErr, "%s", msg, 1))
			})
		}
	}
}

// kubelet's projected TestCollectDataWithServiceAccountToken: the token
// is 0600 when the pod has an fsUser or fsGroup, owned by the fsUser.
func TestProjectedPayloadServiceAccountToken(t *testing.T) {
	minute := int64(60)
	for _, tc := range []struct {
		name             string
		audience         string
		defaultMode      *int32
		fsUser, fsGroup  *int64
		expiration       *int64
		path             string
		want             map[string]mounts.File
		wantErr          string
		noTokenRequester bool
	}{
		{name: "good service account", audience: "https://example.com", defaultMode: ptr.To[int32](0o644), path: "token", expiration: &minute,
			want: map[string]mounts.File{"token": {Data: []byte("test_projected_namespace:foo:60:[https://example.com]"), Mode: 0o644}}},
		{name: "good service account other path", audience: "https://example.com", defaultMode: ptr.To[int32](0o644), path: "other-token", expiration: &minute,
			want: map[string]mounts.File{"other-token": {Data: []byte("test_projected_namespace:foo:60:[https://example.com]"), Mode: 0o644}}},
		{name: "good service account defaults audience", defaultMode: ptr.To[int32](0o644), path: "token", expiration: &minute,
			want: map[string]mounts.File{"token": {Data: []byte("test_projected_namespace:foo:60:[https://api]"), Mode: 0o644}}},
		{name: "good service account defaults expiration", defaultMode: ptr.To[int32](0o644), path: "token",
			want: map[string]mounts.File{"token": {Data: []byte("test_projected_namespace:foo:3600:[https://api]"), Mode: 0o644}}},
		{name: "no default mode", path: "token", wantErr: "no defaultMode used, not even the default value for it"},
		{name: "fsUser != nil", defaultMode: ptr.To[int32](0o644), fsUser: ptr.To[int64](1000), path: "token",
			want: map[string]mounts.File{"token": {Data: []byte("test_projected_namespace:foo:3600:[https://api]"), Mode: 0o600, FsUser: ptr.To[int64](1000)}}},
		{name: "fsGroup != nil", defaultMode: ptr.To[int32](0o644), fsGroup: ptr.To[int64](1000), path: "token",
			want: map[string]mounts.File{"token": {Data: []byte("test_projected_namespace:foo:3600:[https://api]"), Mode: 0o600}}},
		{name: "fsUser != nil && fsGroup != nil", defaultMode: ptr.To[int32](0o644), fsUser: ptr.To[int64](1000), fsGroup: ptr.To[int64](1000), path: "token",
			want: map[string]mounts.File{"token": {Data: []byte("test_projected_namespace:foo:3600:[https://api]"), Mode: 0o600, FsUser: ptr.To[int64](1000)}}},
		{name: "no token requester", defaultMode: ptr.To[int32](0o644), path: "token", noTokenRequester: true,
			wantErr: "failed to fetch token: cannot use TokenManager when kubelet is in standalone mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, UID: "test_pod_uid"}, Spec: corev1.PodSpec{ServiceAccountName: "foo"}}
			var tokens *Tokens
			if !tc.noTokenRequester {
				tokens = NewTokens(&testRequester{})
			}
			got, err := ProjectedPayload(context.Background(), Projection{
				Pod: pod, Objects: newTestSource(), Tokens: tokens, FsUser: tc.fsUser, FsGroup: tc.fsGroup,
				Source: &corev1.ProjectedVolumeSource{DefaultMode: tc.defaultMode, Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
					Audience: tc.audience, ExpirationSeconds: tc.expiration, Path: tc.path}}}},
			})
			checkPayload(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// The request kubelet sends: the pod's service account, the audience,
// the expiration, bound to the pod.
func TestProjectedTokenRequest(t *testing.T) {
	var got *authenticationv1.TokenRequest
	req := requesterFunc(func(_ context.Context, ns, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
		if ns != "ns" || sa != "builder" {
			t.Errorf("token for %s/%s", ns, sa)
		}
		got = tr
		out := tr.DeepCopy()
		out.Status.Token = "t"
		return out, nil
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u"}, Spec: corev1.PodSpec{ServiceAccountName: "builder"}}
	exp := int64(7200)
	if _, err := ProjectedPayload(context.Background(), Projection{Pod: pod, Objects: newTestSource(), Tokens: NewTokens(req),
		Source: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
			Audience: "vault", ExpirationSeconds: &exp, Path: "t"}}}}}); err != nil {
		t.Fatal(err)
	}
	want := authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: &exp,
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u"}}
	if !reflect.DeepEqual(want, got.Spec) {
		t.Errorf("request %+v, want %+v", got.Spec, want)
	}
}

type requesterFunc func(ctx context.Context, ns, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)

func (f requesterFunc) CreateToken(ctx context.Context, ns, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	return f(ctx, ns, sa, tr)
}

// Sources merge in order; a missing optional object is empty; every
// source's error is reported; sources podstart cannot serve are refused
// by name.
func TestProjectedPayloadSources(t *testing.T) {
	ctx := context.Background()
	pod := downwardPod()
	src := newTestSource(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "s"}, Data: map[string][]byte{"same": []byte("secret"), "s": []byte("1")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "c"}, Data: map[string]string{"same": "configmap"}})
	ref := func(n string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: n} }
	vol := func(sources ...corev1.VolumeProjection) Projection {
		return Projection{Pod: pod, VolumeName: "v", Objects: src, Source: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o444), Sources: sources}}
	}
	got, err := ProjectedPayload(ctx, vol(
		corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: ref("s")}},
		corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("c")}},
		corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: ref("gone"), Optional: ptr.To(true)}},
		corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("gone"), Optional: ptr.To(true)}},
		corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
	))
	want := map[string]mounts.File{"same": {Data: []byte("configmap"), Mode: 0o444}, "s": {Data: []byte("1"), Mode: 0o444}, "name": {Data: []byte(testPodName), Mode: 0o444}}
	checkPayload(t, got, err, want, "")

	_, err = ProjectedPayload(ctx, vol(
		corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: ref("gone")}},
		corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("c"), Items: []corev1.KeyToPath{{Key: "nokey", Path: "x"}}}},
		corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr.To("b"), Path: "ca.pem"}},
		corev1.VolumeProjection{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/s", CredentialBundlePath: "cred"}},
	))
	const wantErr = `[secret "gone" not found, configmap references non-existent config key: nokey, ` +
		`ClusterTrustBundle projection is not supported in static kubelet mode, ` +
		`podCertificate source (signer "example.com/s"): podCertificate projections need a PodCertificates manager with an API client]`
	if err == nil || err.Error() != wantErr {
		t.Fatalf("err = %v\nwant %s", err, wantErr)
	}
	if !errors.Is(err, ErrNoPodCertificateClient) || !errors.Is(err, ErrVolumeKeyMissing) || !errors.Is(err, ErrNoClusterTrustBundles) {
		t.Errorf("%v: classes not matched", err)
	}

	p := vol(corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: ref("s")}})
	p.Objects = nil
	if _, err := ProjectedPayload(ctx, p); err == nil || err.Error() != "cannot setup projected volume v because kube client is not configured" {
		t.Errorf("no Source: %v", err)
	}
}
