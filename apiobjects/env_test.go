package apiobjects_test

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/apiobjects"
	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// fetchCounter is a Source that counts fetches per kind/name and can
// fail them.
type fetchCounter struct {
	apiobjects.Source
	fail error // returned for every fetch when set

	mu   sync.Mutex
	gets map[string]int
}

func (f *fetchCounter) count(key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gets == nil {
		f.gets = map[string]int{}
	}
	f.gets[key]++
	return f.fail
}

func (f *fetchCounter) GetSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	if err := f.count("secret/" + name); err != nil {
		return nil, err
	}
	return f.Source.GetSecret(ctx, ns, name)
}

func (f *fetchCounter) GetConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	if err := f.count("configmap/" + name); err != nil {
		return nil, err
	}
	return f.Source.GetConfigMap(ctx, ns, name)
}

func envSyncer(t testing.TB, src apiobjects.Source) *podsync.Syncer {
	return podsync.NewSyncer(fake.New(), nil, podsync.WithRootDir(t.TempDir()), podsync.WithEnvResolver(apiobjects.Env{Source: src}))
}

func envPod(ns string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dapi-test-pod-name", UID: "uid-1"},
		Spec: corev1.PodSpec{ServiceAccountName: "special", NodeName: "node-name"}}
}

func cmKeyRef(env, name, key string, optional bool) corev1.EnvVar {
	return corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}}
}

func secretKeyRef(env, name, key string, optional bool) corev1.EnvVar {
	return corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}}
}

func cmEnvFrom(prefix, name string, optional bool) corev1.EnvFromSource {
	return corev1.EnvFromSource{Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Optional: &optional}}
}

func secretEnvFrom(prefix, name string, optional bool) corev1.EnvFromSource {
	return corev1.EnvFromSource{Prefix: prefix, SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Optional: &optional}}
}

// kubeletServices are the Services of kubelet's
// TestMakeEnvironmentVariables.
func kubeletServices() *apiobjects.Objects {
	build := func(name, ns, ip string, port int32) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Protocol: "TCP", Port: port}}}}
	}
	var objs apiobjects.Objects
	for _, svc := range []*corev1.Service{
		build("kubernetes", metav1.NamespaceDefault, "1.2.3.1", 8081),
		build("test", "test1", "1.2.3.3", 8083),
		build("kubernetes", "test2", "1.2.3.4", 8084),
		build("test", "test2", "1.2.3.5", 8085),
		build("test-none", "test2", "None", 8085),
		build("test-empty", "test2", "", 8085),
		build("not-special", metav1.NamespaceDefault, "1.2.3.8", 8088),
		build("not-special-none", metav1.NamespaceDefault, "None", 8088),
		build("not-special-empty", metav1.NamespaceDefault, "", 8088),
	} {
		objs.SetService(svc)
	}
	return &objs
}

// svcVars are the seven variables kubelet's expectations list for a
// Service with one unnamed TCP port.
func svcVars(prefix, ip, port string) []criconfig.EnvVar {
	url := "tcp://" + ip + ":" + port
	p := prefix + "_PORT_" + port + "_TCP"
	return []criconfig.EnvVar{
		{Name: prefix + "_SERVICE_HOST", Value: ip}, {Name: prefix + "_SERVICE_PORT", Value: port},
		{Name: prefix + "_PORT", Value: url}, {Name: p, Value: url}, {Name: p + "_PROTO", Value: "tcp"},
		{Name: p + "_PORT", Value: port}, {Name: p + "_ADDR", Value: ip},
	}
}

// master is the default namespace's "kubernetes" Service's variables.
func master(more ...criconfig.EnvVar) []criconfig.EnvVar {
	return append(svcVars("KUBERNETES", "1.2.3.1", "8081"), more...)
}

// kubelet's TestMakeEnvironmentVariables (v1.36.3, kubelet_pods_test.go),
// the cases about ConfigMaps and Secrets, through podsync's environment,
// with kubelet's Services (Env.Services) where kubelet's case has a
// Service lister (noServices: kubelet's nilLister), so the expectations
// hold the "kubernetes" Service's variables as kubelet's do. Service links
// are off (kubelet's enableServiceLinks false) unless links is set.
// kubelet's fake serves its one object whatever name is asked; here each
// object has the name its reference uses.
func TestEnvKubeletCases(t *testing.T) {
	literal := []corev1.EnvVar{
		{Name: "TEST_LITERAL", Value: "test-test-test"},
		{Name: "EXPANSION_TEST", Value: "$(REPLACE_ME)"},
		{Name: "DUPE_TEST", Value: "ENV_VAR"},
	}
	testConfigMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "test1", Name: "test-config-map"},
		Data: map[string]string{"REPLACE_ME": "FROM_CONFIG_MAP", "DUPE_TEST": "CONFIG_MAP"}}
	testSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "test1", Name: "test-secret"},
		Data: map[string][]byte{"REPLACE_ME": []byte("FROM_SECRET"), "DUPE_TEST": []byte("SECRET")}}
	tests := []struct {
		name       string
		ns         string
		links      bool
		noServices bool
		container  corev1.Container
		configMap  *corev1.ConfigMap
		secret     *corev1.Secret
		want       []criconfig.EnvVar
		wantErr    string
	}{
		{
			name:      "configmapkeyref_missing_optional",
			ns:        "test",
			container: corev1.Container{Env: []corev1.EnvVar{cmKeyRef("POD_NAME", "missing-config-map", "key", true)}},
			want:      master(),
		},
		{
			name:       "configmapkeyref_missing_key_optional",
			ns:         "test",
			noServices: true,
			container:  corev1.Container{Env: []corev1.EnvVar{cmKeyRef("POD_NAME", "test-config-map", "key", true)}},
			configMap:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "test-config-map"}, Data: map[string]string{"a": "b"}},
		},
		{
			name:      "secretkeyref_missing_optional",
			ns:        "test",
			container: corev1.Container{Env: []corev1.EnvVar{secretKeyRef("POD_NAME", "missing-secret", "key", true)}},
			want:      master(),
		},
		{
			name:       "secretkeyref_missing_key_optional",
			ns:         "test",
			noServices: true,
			container:  corev1.Container{Env: []corev1.EnvVar{secretKeyRef("POD_NAME", "test-secret", "key", true)}},
			secret:     &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "test-secret"}, Data: map[string][]byte{"a": []byte("b")}},
		},
		{
			name: "configmap",
			ns:   "test1",
			container: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{cmEnvFrom("", "test-config-map", false), cmEnvFrom("p_", "test-config-map", false)},
				Env:     literal,
			},
			configMap: testConfigMap,
			want: master(
				criconfig.EnvVar{Name: "TEST_LITERAL", Value: "test-test-test"},
				criconfig.EnvVar{Name: "REPLACE_ME", Value: "FROM_CONFIG_MAP"},
				criconfig.EnvVar{Name: "EXPANSION_TEST", Value: "FROM_CONFIG_MAP"},
				criconfig.EnvVar{Name: "DUPE_TEST", Value: "ENV_VAR"},
				criconfig.EnvVar{Name: "p_REPLACE_ME", Value: "FROM_CONFIG_MAP"},
				criconfig.EnvVar{Name: "p_DUPE_TEST", Value: "CONFIG_MAP"},
			),
		},
		{
			name: "configmap allow prefix to start with a digital",
			ns:   "test1",
			container: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{cmEnvFrom("", "test-config-map", false), cmEnvFrom("1_", "test-config-map", false)},
				Env:     literal,
			},
			configMap: testConfigMap,
			want: master(
				criconfig.EnvVar{Name: "TEST_LITERAL", Value: "test-test-test"},
				criconfig.EnvVar{Name: "REPLACE_ME", Value: "FROM_CONFIG_MAP"},
				criconfig.EnvVar{Name: "EXPANSION_TEST", Value: "FROM_CONFIG_MAP"},
				criconfig.EnvVar{Name: "DUPE_TEST", Value: "ENV_VAR"},
				criconfig.EnvVar{Name: "1_REPLACE_ME", Value: "FROM_CONFIG_MAP"},
				criconfig.EnvVar{Name: "1_DUPE_TEST", Value: "CONFIG_MAP"},
			),
		},
		{
			name:      "configmap_missing",
			ns:        "test1",
			container: corev1.Container{EnvFrom: []corev1.EnvFromSource{cmEnvFrom("", "test-config-map", false)}},
			wantErr:   `configmap "test-config-map" not found`,
		},
		{
			name:      "configmap_missing_optional",
			ns:        "test",
			container: corev1.Container{EnvFrom: []corev1.EnvFromSource{cmEnvFrom("", "missing-config-map", true)}},
			want:      master(),
		},
		{
			name:      "configmap_invalid_keys_valid",
			ns:        "test",
			container: corev1.Container{EnvFrom: []corev1.EnvFromSource{cmEnvFrom("p_", "test-config-map", false)}},
			configMap: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "test-config-map"}, Data: map[string]string{"1234": "abc"}},
			want:      master(criconfig.EnvVar{Name: "p_1234", Value: "abc"}),
		},
		{
			name: "secret",
			ns:   "test1",
			container: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{secretEnvFrom("", "test-secret", false), secretEnvFrom("p_", "test-secret", false)},
				Env:     literal,
			},
			secret: testSecret,
			want: master(
				criconfig.EnvVar{Name: "TEST_LITERAL", Value: "test-test-test"},
				criconfig.EnvVar{Name: "REPLACE_ME", Value: "FROM_SECRET"},
				criconfig.EnvVar{Name: "EXPANSION_TEST", Value: "FROM_SECRET"},
				criconfig.EnvVar{Name: "DUPE_TEST", Value: "ENV_VAR"},
				criconfig.EnvVar{Name: "p_REPLACE_ME", Value: "FROM_SECRET"},
				criconfig.EnvVar{Name: "p_DUPE_TEST", Value: "SECRET"},
			),
		},
		{
			name:      "secret_missing",
			ns:        "test1",
			container: corev1.Container{EnvFrom: []corev1.EnvFromSource{secretEnvFrom("", "test-secret", false)}},
			wantErr:   `secret "test-secret" not found`,
		},
		{
			name:      "secret_missing_optional",
			ns:        "test",
			container: corev1.Container{EnvFrom: []corev1.EnvFromSource{secretEnvFrom("", "missing-secret", true)}},
			want:      master(),
		},
		{
			name:      "secret_invalid_keys_valid",
			ns:        "test",
			container: corev1.Container{EnvFrom: []corev1.EnvFromSource{secretEnvFrom("p_", "test-secret", false)}},
			secret:    &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "test-secret"}, Data: map[string][]byte{"1234.name": []byte("abc")}},
			want:      master(criconfig.EnvVar{Name: "p_1234.name", Value: "abc"}),
		},
		{
			name:  "configmap, service env vars",
			ns:    "test1",
			links: true,
			container: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{cmEnvFrom("", "test-config-map", false), cmEnvFrom("p_", "test-config-map", false)},
				Env:     literal,
			},
			configMap: testConfigMap,
			want: append(master(
				criconfig.EnvVar{Name: "TEST_LITERAL", Value: "test-test-test"},
				criconfig.EnvVar{Name: "REPLACE_ME", Value: "FROM_CONFIG_MAP"},
				criconfig.EnvVar{Name: "EXPANSION_TEST", Value: "FROM_CONFIG_MAP"},
				criconfig.EnvVar{Name: "DUPE_TEST", Value: "ENV_VAR"},
				criconfig.EnvVar{Name: "p_REPLACE_ME", Value: "FROM_CONFIG_MAP"},
				criconfig.EnvVar{Name: "p_DUPE_TEST", Value: "CONFIG_MAP"},
			), svcVars("TEST", "1.2.3.3", "8083")...),
		},
		{
			name:  "secret, service env vars",
			ns:    "test1",
			links: true,
			container: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{secretEnvFrom("", "test-secret", false), secretEnvFrom("p_", "test-secret", false)},
				Env:     literal,
			},
			secret: testSecret,
			want: append(master(
				criconfig.EnvVar{Name: "TEST_LITERAL", Value: "test-test-test"},
				criconfig.EnvVar{Name: "REPLACE_ME", Value: "FROM_SECRET"},
				criconfig.EnvVar{Name: "EXPANSION_TEST", Value: "FROM_SECRET"},
				criconfig.EnvVar{Name: "DUPE_TEST", Value: "ENV_VAR"},
				criconfig.EnvVar{Name: "p_REPLACE_ME", Value: "FROM_SECRET"},
				criconfig.EnvVar{Name: "p_DUPE_TEST", Value: "SECRET"},
			), svcVars("TEST", "1.2.3.3", "8083")...),
		},
		// The non-optional branches of the same code, with kubelet's messages.
		{
			name:       "configmapkeyref_missing",
			ns:         "test",
			noServices: true,
			container:  corev1.Container{Env: []corev1.EnvVar{cmKeyRef("POD_NAME", "missing-config-map", "key", false)}},
			wantErr:    `configmap "missing-config-map" not found`,
		},
		{
			name:       "configmapkeyref_missing_key",
			ns:         "test",
			noServices: true,
			container:  corev1.Container{Env: []corev1.EnvVar{cmKeyRef("POD_NAME", "test-config-map", "key", false)}},
			configMap:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "test-config-map"}, Data: map[string]string{"a": "b"}},
			wantErr:    "couldn't find key key in ConfigMap test/test-config-map",
		},
		{
			name:       "secretkeyref_missing_key",
			ns:         "test",
			noServices: true,
			container:  corev1.Container{Env: []corev1.EnvVar{secretKeyRef("POD_NAME", "test-secret", "key", false)}},
			secret:     &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "test-secret"}, Data: map[string][]byte{"a": []byte("hunter2")}},
			wantErr:    "couldn't find key key in Secret test/test-secret",
		},
		{
			name:       "keyrefs found, BinaryData not read by envFrom",
			ns:         "test",
			noServices: true,
			container: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{cmEnvFrom("", "test-config-map", false)},
				Env:     []corev1.EnvVar{cmKeyRef("FROM_CM", "test-config-map", "a", false), secretKeyRef("FROM_SECRET", "test-secret", "a", false)},
			},
			configMap: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "test-config-map"},
				Data: map[string]string{"a": "b"}, BinaryData: map[string][]byte{"bin": {0xff}}},
			secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "test-secret"}, Data: map[string][]byte{"a": []byte("s3cr3t")}},
			want:   []criconfig.EnvVar{{Name: "a", Value: "b"}, {Name: "FROM_CM", Value: "b"}, {Name: "FROM_SECRET", Value: "s3cr3t"}},
		},
		{
			name:       "optional key absent: the envFrom value of that name stays",
			ns:         "test",
			noServices: true,
			container: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{cmEnvFrom("", "test-config-map", false)},
				Env:     []corev1.EnvVar{cmKeyRef("a", "test-config-map", "absent", true)},
			},
			configMap: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "test-config-map"}, Data: map[string]string{"a": "b"}},
			want:      []criconfig.EnvVar{{Name: "a", Value: "b"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs apiobjects.Objects
			if tt.configMap != nil {
				objs.SetConfigMap(tt.configMap)
			}
			if tt.secret != nil {
				objs.SetSecret(tt.secret)
			}
			tt.container.Name = "test-container"
			env := apiobjects.Env{Source: &objs}
			if !tt.noServices {
				env.Services = kubeletServices()
			}
			pod := envPod(tt.ns)
			pod.Spec.EnableServiceLinks = &tt.links
			s := podsync.NewSyncer(fake.New(), nil, podsync.WithRootDir(t.TempDir()), podsync.WithEnvResolver(env))
			got, err := s.Environment(context.Background(), pod, &tt.container, nil)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("error carries a secret value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// kubelet's order is a map's; compare as kubelet's test does, sorted.
			byName := func(e []criconfig.EnvVar) func(i, j int) bool {
				return func(i, j int) bool { return e[i].Name < e[j].Name }
			}
			sort.Slice(got, byName(got))
			sort.Slice(tt.want, byName(tt.want))
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("env\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

// Errors a caller can match, and the ones that are not skipped.
func TestEnvErrors(t *testing.T) {
	ctx := context.Background()
	pod := envPod("ns")
	c := &corev1.Container{Name: "app"}

	var missing *apiobjects.MissingKeyError
	var objs apiobjects.Objects
	objs.SetSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"other": []byte("hunter2")}})
	_, err := apiobjects.Env{Source: &objs}.ValueFrom(ctx, pod, c, secretKeyRef("X", "s", "k", false))
	if !errors.As(err, &missing) || missing.Kind != "Secret" || missing.Key != "k" || missing.Name != "s" || missing.Namespace != "ns" {
		t.Fatalf("missing key: %v", err)
	}
	if _, err := (apiobjects.Env{Source: &objs}).ValueFrom(ctx, pod, c, secretKeyRef("X", "s", "k", true)); !errors.Is(err, podsync.ErrSkipEnvVar) {
		t.Fatalf("optional missing key: %v, want ErrSkipEnvVar", err)
	}
	if _, err := (apiobjects.Env{Source: &objs}).ValueFrom(ctx, pod, c, cmKeyRef("X", "none", "k", true)); !errors.Is(err, podsync.ErrSkipEnvVar) {
		t.Fatalf("optional missing configmap: %v, want ErrSkipEnvVar", err)
	}
	if _, err := (apiobjects.Env{Source: &objs}).ValueFrom(ctx, pod, c, cmKeyRef("X", "none", "k", false)); !apierrors.IsNotFound(err) {
		t.Fatalf("missing configmap: %v, want the Source's NotFound", err)
	}

	// Only NotFound is skipped for an optional reference: another failure
	// (an unreachable API server) fails the container, as in kubelet.
	down := &fetchCounter{Source: &objs, fail: apierrors.NewServiceUnavailable("etcd down")}
	for _, try := range []func() error{
		func() error {
			_, err := apiobjects.Env{Source: down}.ValueFrom(ctx, pod, c, secretKeyRef("X", "s", "k", true))
			return err
		},
		func() error {
			_, err := apiobjects.Env{Source: down}.EnvFrom(ctx, pod, c, cmEnvFrom("", "cm", true))
			return err
		},
	} {
		if err := try(); !apierrors.IsServiceUnavailable(err) {
			t.Errorf("error %v, want the Source's", err)
		}
	}

	// No Source: kubelet's "no kubeClient" message, even when optional.
	for _, tt := range []struct {
		try  func() error
		want string
	}{
		{func() error {
			_, err := apiobjects.Env{}.ValueFrom(ctx, pod, c, cmKeyRef("X", "cm", "k", true))
			return err
		}, "couldn't get configMap ns/cm, no kubeClient defined"},
		{func() error {
			_, err := apiobjects.Env{}.EnvFrom(ctx, pod, c, secretEnvFrom("", "s", true))
			return err
		}, "couldn't get secret ns/s, no kubeClient defined"},
	} {
		if err := tt.try(); !errors.Is(err, apiobjects.ErrNoSource) || err.Error() != tt.want {
			t.Errorf("error %v, want %q matching ErrNoSource", err, tt.want)
		}
	}

	// Sources Env does not resolve are refused by name, never read as "".
	if _, err := (apiobjects.Env{Source: &objs}).ValueFrom(ctx, pod, c, corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{}}); err == nil || !strings.Contains(err.Error(), `"X"`) {
		t.Errorf("unknown valueFrom: %v", err)
	}
	if _, err := (apiobjects.Env{Source: &objs}).EnvFrom(ctx, pod, c, corev1.EnvFromSource{Prefix: "p_"}); err == nil || !strings.Contains(err.Error(), `"app"`) {
		t.Errorf("empty envFrom: %v", err)
	}
}

// Within one container each object is fetched once, whether envFrom or a
// key reference asks for it (kubelet's configMaps/secrets maps); a failed
// fetch is not kept, so an optional missing object is asked again; the
// next container fetches again.
func TestEnvFetchesOncePerContainer(t *testing.T) {
	var objs apiobjects.Objects
	objs.SetConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"a": "1", "b": "2"}})
	objs.SetSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"a": []byte("1")}})
	src := &fetchCounter{Source: &objs}
	s := envSyncer(t, src)
	c := &corev1.Container{Name: "app",
		EnvFrom: []corev1.EnvFromSource{cmEnvFrom("", "cm", false), cmEnvFrom("x_", "cm", false), secretEnvFrom("s_", "s", false)},
		Env: []corev1.EnvVar{cmKeyRef("A", "cm", "a", false), cmKeyRef("B", "cm", "b", false), secretKeyRef("S", "s", "a", false),
			cmKeyRef("O1", "gone", "a", true), cmKeyRef("O2", "gone", "a", true)}}
	for range 2 {
		if _, err := s.Environment(context.Background(), envPod("ns"), c, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{"configmap/cm": 2, "secret/s": 2, "configmap/gone": 4}
	if !reflect.DeepEqual(src.gets, want) {
		t.Fatalf("fetches %v, want %v", src.gets, want)
	}
}

func BenchmarkEnvironment(b *testing.B) {
	var objs apiobjects.Objects
	data := map[string]string{}
	for _, k := range []string{"A", "B", "C", "D", "E", "F", "G", "H"} {
		data[k] = k + "-value"
	}
	objs.SetConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: data})
	objs.SetSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"password": []byte("x")}})
	s := envSyncer(b, &objs)
	c := &corev1.Container{Name: "app", EnvFrom: []corev1.EnvFromSource{cmEnvFrom("", "cm", false)},
		Env: []corev1.EnvVar{secretKeyRef("PASSWORD", "s", "password", false), cmKeyRef("A2", "cm", "A", false), {Name: "URL", Value: "$(A)/$(B)"}}}
	pod := envPod("ns")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Environment(ctx, pod, c, nil); err != nil {
			b.Fatal(err)
		}
	}
}
