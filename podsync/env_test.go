package podsync_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// envTable is a resolver of fixed answers: ValueFrom by variable name
// (an entry "skip" answers ErrSkipEnvVar), EnvFrom by source name.
type envTable struct {
	values  map[string]string
	sources map[string]map[string]string
	scoped  *int // counts ForContainer calls when set
}

func (r envTable) ValueFrom(_ context.Context, _ *corev1.Pod, _ *corev1.Container, env corev1.EnvVar) (string, error) {
	v, ok := r.values[env.Name]
	if !ok {
		return "", errors.New("no value")
	}
	if v == "skip" {
		return "", podsync.ErrSkipEnvVar
	}
	return v, nil
}

func (r envTable) EnvFrom(_ context.Context, _ *corev1.Pod, _ *corev1.Container, src corev1.EnvFromSource) (map[string]string, error) {
	return r.sources[src.ConfigMapRef.Name], nil
}

type scopedEnvTable struct{ envTable }

func (r scopedEnvTable) ForContainer(*corev1.Pod, *corev1.Container) podsync.EnvResolver {
	*r.scoped++
	return r.envTable
}

func keyRef(name string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k"}}}
}

func fromCM(prefix, name string) corev1.EnvFromSource {
	return corev1.EnvFromSource{Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
}

// The Syncer's part of kubelet's makeEnvironmentVariables: envFrom first
// (prefix added to each key, later sources win), then env in order, an
// optional reference that is absent leaves the variable out (an envFrom
// value of that name stays), fileKeyRef is refused by name.
func TestEnvironment(t *testing.T) {
	resolver := envTable{
		values:  map[string]string{"FROM_CM": "cm-value", "OPTIONAL": "skip", "DUPE": "skip"},
		sources: map[string]map[string]string{"a": {"Z": "1", "DUPE": "from-a", "1234.name": "x"}, "b": {"Z": "2"}},
	}
	tests := []struct {
		name     string
		resolver podsync.EnvResolver
		c        corev1.Container
		want     []criconfig.EnvVar
		wantErr  string
		errIs    error
	}{
		{
			name:     "envFrom keys sorted, prefix added, later source wins, env overrides",
			resolver: resolver,
			c: corev1.Container{Name: "app", EnvFrom: []corev1.EnvFromSource{fromCM("", "a"), fromCM("p_", "a"), fromCM("", "b")},
				Env: []corev1.EnvVar{{Name: "DUPE", Value: "literal"}, {Name: "EXP", Value: "$(Z)-$(p_Z)"}}},
			want: []criconfig.EnvVar{{Name: "1234.name", Value: "x"}, {Name: "DUPE", Value: "literal"}, {Name: "Z", Value: "2"},
				{Name: "p_1234.name", Value: "x"}, {Name: "p_DUPE", Value: "from-a"}, {Name: "p_Z", Value: "1"}, {Name: "EXP", Value: "2-1"}},
		},
		{
			name:     "optional absent: variable left out, the envFrom value stays",
			resolver: resolver,
			c:        corev1.Container{Name: "app", EnvFrom: []corev1.EnvFromSource{fromCM("", "a")}, Env: []corev1.EnvVar{keyRef("OPTIONAL"), keyRef("DUPE"), keyRef("FROM_CM")}},
			want:     []criconfig.EnvVar{{Name: "1234.name", Value: "x"}, {Name: "DUPE", Value: "from-a"}, {Name: "Z", Value: "1"}, {Name: "FROM_CM", Value: "cm-value"}},
		},
		{
			name:     "a value wins over valueFrom, as kubelet reads valueFrom only without one",
			resolver: resolver,
			c:        corev1.Container{Name: "app", Env: []corev1.EnvVar{{Name: "V", Value: "lit", ValueFrom: keyRef("V").ValueFrom}}},
			want:     []criconfig.EnvVar{{Name: "V", Value: "lit"}},
		},
		{
			name:     "resolver error fails the container",
			resolver: resolver,
			c:        corev1.Container{Name: "app", Env: []corev1.EnvVar{keyRef("UNKNOWN")}},
			wantErr:  "no value",
		},
		{
			name:    "valueFrom without a resolver",
			c:       corev1.Container{Name: "app", Env: []corev1.EnvVar{keyRef("FROM_CM")}},
			wantErr: `environment variable "FROM_CM" of container "app" uses valueFrom, which needs an EnvResolver (podsync.WithEnvResolver)`,
		},
		{
			name:    "envFrom without a resolver",
			c:       corev1.Container{Name: "app", EnvFrom: []corev1.EnvFromSource{fromCM("", "a")}},
			wantErr: `container "app" uses envFrom, which needs an EnvResolver (podsync.WithEnvResolver)`,
		},
		{
			name:     "fileKeyRef refused by name, whatever the resolver",
			resolver: resolver,
			c: corev1.Container{Name: "app", Env: []corev1.EnvVar{{Name: "F", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{
				VolumeName: "config", Path: "app.env", Key: "F"}}}}},
			wantErr: `environment variable "F" of container "app" uses fileKeyRef, which podsync does not resolve`,
			errIs:   criconfig.ErrUnsupported,
		},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []podsync.Option
			if tt.resolver != nil {
				opts = append(opts, podsync.WithEnvResolver(tt.resolver))
			}
			s := podsync.NewSyncer(fake.New(), nil, append(opts, podsync.WithRootDir(t.TempDir()))...)
			got, err := s.Environment(context.Background(), pod, &tt.c, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				if tt.errIs != nil && !errors.Is(err, tt.errIs) {
					t.Fatalf("error %v does not match %v", err, tt.errIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("env\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

// A ContainerEnvResolver is asked once per container environment.
func TestEnvironmentForContainer(t *testing.T) {
	n := 0
	r := scopedEnvTable{envTable{values: map[string]string{"A": "1", "B": "2"}, scoped: &n}}
	s := podsync.NewSyncer(fake.New(), nil, podsync.WithEnvResolver(r), podsync.WithRootDir(t.TempDir()))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"}}
	c := corev1.Container{Name: "app", Env: []corev1.EnvVar{keyRef("A"), keyRef("B")}}
	for i := 1; i <= 2; i++ {
		got, err := s.Environment(context.Background(), pod, &c, nil)
		if err != nil || len(got) != 2 || n != i {
			t.Fatalf("env %v, %v; ForContainer called %d times, want %d", got, err, n, i)
		}
	}
}
