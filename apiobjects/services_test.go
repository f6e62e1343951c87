package apiobjects_test

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/apiobjects"
	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

func fieldRef(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
}

// kubelet's TestMakeEnvironmentVariables (v1.36.3), the cases about
// Services, through podsync's environment with Env.Services over
// kubelet's Services (noServices: kubelet's nilLister; unsynced: its
// serviceHasSynced false). Compared sorted, as kubelet's test compares.
func TestEnvKubeletServiceCases(t *testing.T) {
	apiServerVars := []corev1.EnvVar{
		{Name: "FOO", Value: "BAR"},
		{Name: "TEST_SERVICE_HOST", Value: "1.2.3.3"},
		{Name: "TEST_SERVICE_PORT", Value: "8083"},
		{Name: "TEST_PORT", Value: "tcp://1.2.3.3:8083"},
		{Name: "TEST_PORT_8083_TCP", Value: "tcp://1.2.3.3:8083"},
		{Name: "TEST_PORT_8083_TCP_PROTO", Value: "tcp"},
		{Name: "TEST_PORT_8083_TCP_PORT", Value: "8083"},
		{Name: "TEST_PORT_8083_TCP_ADDR", Value: "1.2.3.3"},
	}
	asEnv := func(vars []corev1.EnvVar) []criconfig.EnvVar {
		var out []criconfig.EnvVar
		for _, v := range vars {
			out = append(out, criconfig.EnvVar{Name: v.Name, Value: v.Value})
		}
		return out
	}
	expansion := []corev1.EnvVar{
		{Name: "TEST_LITERAL", Value: "test-test-test"},
		fieldRef("POD_NAME", "metadata.name"),
		{Name: "OUT_OF_ORDER_TEST", Value: "$(OUT_OF_ORDER_TARGET)"},
		{Name: "OUT_OF_ORDER_TARGET", Value: "FOO"},
		{Name: "EMPTY_VAR"},
		{Name: "EMPTY_TEST", Value: "foo-$(EMPTY_VAR)"},
		{Name: "POD_NAME_TEST2", Value: "test2-$(POD_NAME)"},
		{Name: "POD_NAME_TEST3", Value: "$(POD_NAME_TEST2)-3"},
		{Name: "LITERAL_TEST", Value: "literal-$(TEST_LITERAL)"},
		{Name: "TEST_UNDEFINED", Value: "$(UNDEFINED_VAR)"},
	}
	expanded := []criconfig.EnvVar{
		{Name: "TEST_LITERAL", Value: "test-test-test"},
		{Name: "POD_NAME", Value: "dapi-test-pod-name"},
		{Name: "POD_NAME_TEST2", Value: "test2-dapi-test-pod-name"},
		{Name: "POD_NAME_TEST3", Value: "test2-dapi-test-pod-name-3"},
		{Name: "LITERAL_TEST", Value: "literal-test-test-test"},
		{Name: "OUT_OF_ORDER_TEST", Value: "$(OUT_OF_ORDER_TARGET)"},
		{Name: "OUT_OF_ORDER_TARGET", Value: "FOO"},
		{Name: "TEST_UNDEFINED", Value: "$(UNDEFINED_VAR)"},
		{Name: "EMPTY_VAR"},
		{Name: "EMPTY_TEST", Value: "foo-"},
	}
	tests := []struct {
		name       string
		ns         string
		links      *bool
		static     bool
		unsynced   bool
		noServices bool
		container  corev1.Container
		secret     *corev1.Secret
		want       []criconfig.EnvVar
		wantErr    error
	}{
		{name: "if services aren't synced, non-static pods should fail", ns: "test1", links: new(false), unsynced: true,
			wantErr: apiobjects.ErrServicesNotSynced},
		{name: "if services aren't synced, static pods should succeed", ns: "test1", links: new(false), unsynced: true, static: true,
			noServices: true /* kubelet's lister is empty here */},
		{name: "api server = Y, kubelet = Y", ns: "test1", links: new(false), container: corev1.Container{Env: apiServerVars},
			want: master(asEnv(apiServerVars)...)},
		{name: "api server = Y, kubelet = N", ns: "test1", links: new(false), noServices: true, container: corev1.Container{Env: apiServerVars},
			want: asEnv(apiServerVars)},
		{name: "api server = N; kubelet = Y", ns: "test1", links: new(false), container: corev1.Container{Env: []corev1.EnvVar{{Name: "FOO", Value: "BAZ"}}},
			want: master(criconfig.EnvVar{Name: "FOO", Value: "BAZ"})},
		{name: "api server = N; kubelet = Y; service env vars", ns: "test1", links: new(true), container: corev1.Container{Env: []corev1.EnvVar{{Name: "FOO", Value: "BAZ"}}},
			want: append(master(criconfig.EnvVar{Name: "FOO", Value: "BAZ"}), svcVars("TEST", "1.2.3.3", "8083")...)},
		{name: "master service in pod ns", ns: "test2", links: new(false), container: corev1.Container{Env: []corev1.EnvVar{{Name: "FOO", Value: "ZAP"}}},
			want: master(criconfig.EnvVar{Name: "FOO", Value: "ZAP"})},
		{name: "master service in pod ns, service env vars", ns: "test2", links: new(true), container: corev1.Container{Env: []corev1.EnvVar{{Name: "FOO", Value: "ZAP"}}},
			want: append(append(svcVars("KUBERNETES", "1.2.3.4", "8084"), criconfig.EnvVar{Name: "FOO", Value: "ZAP"}), svcVars("TEST", "1.2.3.5", "8085")...)},
		{name: "pod in master service ns", ns: metav1.NamespaceDefault, links: new(false), want: master()},
		{name: "pod in master service ns, service env vars", ns: metav1.NamespaceDefault, links: new(true),
			want: master(svcVars("NOT_SPECIAL", "1.2.3.8", "8088")...)},
		{name: "env expansion", ns: "test1", links: new(false), container: corev1.Container{Env: expansion}, want: master(expanded...)},
		{name: "env expansion, service env vars", ns: "test1", links: new(true),
			container: corev1.Container{Env: append(append([]corev1.EnvVar{}, expansion...), corev1.EnvVar{Name: "SERVICE_VAR_TEST", Value: "$(TEST_SERVICE_HOST):$(TEST_SERVICE_PORT)"})},
			want:      append(master(expanded...), append(svcVars("TEST", "1.2.3.3", "8083"), criconfig.EnvVar{Name: "SERVICE_VAR_TEST", Value: "1.2.3.3:8083"})...)},
		// kubelet refuses a pod whose enableServiceLinks is unset ("nil
		// pod.spec.enableServiceLinks encountered, cannot construct
		// envvars"): it only sees pods the API server defaulted to true.
		// podstart takes pods from anywhere and reads unset as that default.
		{name: "nil_enableServiceLinks (a difference: unset is the API default, true)", ns: "test1",
			container: corev1.Container{EnvFrom: []corev1.EnvFromSource{secretEnvFrom("p_", "test-secret", false)}},
			secret:    &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "test1", Name: "test-secret"}, Data: map[string][]byte{"1234.name": []byte("abc")}},
			want:      append(master(criconfig.EnvVar{Name: "p_1234.name", Value: "abc"}), svcVars("TEST", "1.2.3.3", "8083")...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs apiobjects.Objects
			if tt.secret != nil {
				objs.SetSecret(tt.secret)
			}
			env := apiobjects.Env{Source: &objs, Services: kubeletServices()}
			if tt.noServices {
				env.Services = &apiobjects.Objects{}
			}
			if tt.unsynced {
				env.ServicesSynced = func() bool { return false }
			}
			pod := envPod(tt.ns)
			pod.Spec.EnableServiceLinks = tt.links
			if tt.static {
				pod.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
			}
			tt.container.Name = "test-container"
			s := podsync.NewSyncer(fake.New(), nil, podsync.WithRootDir(t.TempDir()), podsync.WithEnvResolver(env))
			got, err := s.Environment(context.Background(), pod, &tt.container, []string{"1.2.3.4"})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || err.Error() != tt.wantErr.Error() {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sortEnv(got)
			sortEnv(tt.want)
			if len(got) != 0 || len(tt.want) != 0 {
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("env\n got %v\nwant %v", got, tt.want)
				}
			}
		})
	}
}

func sortEnv(e []criconfig.EnvVar) {
	sort.Slice(e, func(i, j int) bool { return e[i].Name < e[j].Name })
}

// listCounter counts ListServices calls by namespace and can fail them.
type listCounter struct {
	apiobjects.ServiceLister
	fail  error
	lists map[string]int
}

func (l *listCounter) ListServices(ctx context.Context, ns string) ([]*corev1.Service, error) {
	if l.lists == nil {
		l.lists = map[string]int{}
	}
	l.lists[ns]++
	if l.fail != nil {
		return nil, l.fail
	}
	return l.ServiceLister.ListServices(ctx, ns)
}

// Env asks only for the namespaces it needs; a failed list carries
// kubelet's message and the lister's error beneath; without Services
// nothing is asked or added.
func TestServiceEnvLists(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		ns    string
		links bool
		want  map[string]int
	}{
		{"test1", false, map[string]int{"default": 1}},
		{"test1", true, map[string]int{"default": 1, "test1": 1}},
		{"default", true, map[string]int{"default": 1}},
	} {
		lister := &listCounter{ServiceLister: kubeletServices()}
		pod := envPod(tt.ns)
		pod.Spec.EnableServiceLinks = &tt.links
		if _, err := (apiobjects.Env{Services: lister}).ServiceEnv(ctx, pod); err != nil || !reflect.DeepEqual(lister.lists, tt.want) {
			t.Errorf("ns %s links %v: lists %v, %v; want %v", tt.ns, tt.links, lister.lists, err, tt.want)
		}
	}

	down := apierrors.NewServiceUnavailable("etcd down")
	_, err := apiobjects.Env{Services: &listCounter{ServiceLister: kubeletServices(), fail: down}}.ServiceEnv(ctx, envPod("test1"))
	if !errors.Is(err, apiobjects.ErrListServices) || !apierrors.IsServiceUnavailable(err) || err.Error() != "failed to list services when setting up env vars" {
		t.Fatalf("list failure: %v", err)
	}

	if env, err := (apiobjects.Env{}).ServiceEnv(ctx, envPod("test1")); env != nil || err != nil {
		t.Fatalf("no Services: %v, %v", env, err)
	}
	synced := false
	env := apiobjects.Env{Services: kubeletServices(), ServicesSynced: func() bool { return synced }}
	if _, err := env.ServiceEnv(ctx, envPod("test1")); !errors.Is(err, apiobjects.ErrServicesNotSynced) {
		t.Fatalf("unsynced: %v", err)
	}
	api := envPod("test1")
	api.Annotations = map[string]string{"kubernetes.io/config.source": "api"}
	if _, err := env.ServiceEnv(ctx, api); !errors.Is(err, apiobjects.ErrServicesNotSynced) {
		t.Fatalf("unsynced API pod: %v", err)
	}
	synced = true
	if vars, err := env.ServiceEnv(ctx, api); err != nil || vars["KUBERNETES_SERVICE_HOST"] != "1.2.3.1" {
		t.Fatalf("synced: %v, %v", vars, err)
	}
}

// In a sync, service variables follow the container's own, in name
// order, and the Services are listed once for all the containers
// started.
func TestServiceEnvInSync(t *testing.T) {
	lister := &listCounter{ServiceLister: kubeletServices()}
	rt := fake.New()
	ref, err := rt.PullImage(context.Background(), &runtimeapi.ImageSpec{Image: "img"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := podsync.NewSyncer(rt, fakeImages{ref}, podsync.WithRootDir(t.TempDir()), podsync.WithPodLogsDir(t.TempDir()),
		podsync.WithEnvResolver(apiobjects.Env{Source: &apiobjects.Objects{}, Services: lister}))
	pod := envPod("test1")
	pod.Spec.EnableServiceLinks = new(true)
	pod.Spec.Containers = []corev1.Container{
		{Name: "a", Image: "img", Env: []corev1.EnvVar{{Name: "TEST_SERVICE_HOST", Value: "mine"}, {Name: "Z", Value: "$(KUBERNETES_SERVICE_PORT)"}}},
		{Name: "b", Image: "img"},
	}
	res := s.SyncPod(context.Background(), pod, &podsync.PodStatus{}, nil)
	if err := res.Error(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(lister.lists, map[string]int{"default": 1, "test1": 1}) {
		t.Fatalf("lists %v, want one per namespace for the sync", lister.lists)
	}
	created := 0
	for _, call := range rt.Calls() {
		req, ok := call.Request.(*runtimeapi.CreateContainerRequest)
		if !ok {
			continue
		}
		created++
		c := req
		var names []string
		env := map[string]string{}
		for _, kv := range c.Config.Envs {
			names = append(names, kv.Key)
			env[kv.Key] = string(kv.Value)
		}
		if len(names) == 0 {
			t.Fatalf("container %s has no environment", c.Config.Metadata.Name)
		}
		start := 0
		if c.Config.Metadata.Name == "a" {
			if names[0] != "TEST_SERVICE_HOST" || names[1] != "Z" || env["TEST_SERVICE_HOST"] != "mine" || env["Z"] != "8081" {
				t.Fatalf("container a: %v", env)
			}
			start = 2
		}
		if !sort.StringsAreSorted(names[start:]) || env["KUBERNETES_SERVICE_HOST"] != "1.2.3.1" || env["TEST_PORT"] != "tcp://1.2.3.3:8083" {
			t.Fatalf("container %s: %v", c.Config.Metadata.Name, names)
		}
	}
	if created != 2 {
		t.Fatalf("%d containers created, want 2", created)
	}
}

// fakeImages answers one image reference for every container.
type fakeImages struct{ ref string }

func (f fakeImages) EnsureImageExists(context.Context, *corev1.Pod, *corev1.Container, []corev1.Secret, *runtimeapi.PodSandboxConfig) (string, string, error) {
	return f.ref, "", nil
}

// One container's environment with the "kubernetes" Service and its
// namespace's Services, listed from Objects on each call.
func BenchmarkEnvironmentWithServices(b *testing.B) {
	s := podsync.NewSyncer(fake.New(), nil, podsync.WithRootDir(b.TempDir()),
		podsync.WithEnvResolver(apiobjects.Env{Source: &apiobjects.Objects{}, Services: kubeletServices()}))
	pod := envPod("test1")
	pod.Spec.EnableServiceLinks = new(true)
	c := &corev1.Container{Name: "app", Env: []corev1.EnvVar{{Name: "URL", Value: "http://$(TEST_SERVICE_HOST):$(TEST_SERVICE_PORT)"}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if env, err := s.Environment(ctx, pod, c, nil); err != nil || len(env) != 15 {
			b.Fatal(len(env), err)
		}
	}
}
