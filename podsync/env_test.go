package podsync_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/mounts"
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
// value of that name stays).
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

// volumesAt is a VolumeProvider with fixed answers.
type volumesAt mounts.VolumeMap

func (v volumesAt) Volumes(context.Context, *corev1.Pod) (mounts.VolumeMap, error) {
	return mounts.VolumeMap(v), nil
}

func fileKeyRef(name, volume, path, key string, optional *bool) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{
		VolumeName: volume, Path: path, Key: key, Optional: optional}}}
}

// kubelet's TestMakeEnvironmentVariablesWithFileKeyRef (v1.36.3,
// kubelet_pods_test.go): the same files, references and outcomes, kubelet's
// messages, through Syncer.Environment with the volume mounted at a
// directory; then cases kubelet's code decides without a test.
func TestEnvironmentFileKeyRef(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("database.env", "DATABASE='mydb'\nAPI_KEY='secret123'\n")
	write("debug.env", "DEBUG_MODE = 'true'\nLOG_LEVEL = 'info'\n")
	write("api.env", "API_KEY='secret123'\n")
	write("empty.env", "EMPTY=''\nBLANK= 'x'\n")
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "link.env")); err != nil {
		t.Fatal(err)
	}
	config := func(content string) string { write("config.env", content); return "config.env" }
	vols := volumesAt{"config-volume": {HostPath: dir}, "unmounted": {}, "host": {HostPath: dir}}
	tests := []struct {
		name    string
		setup   func()
		env     []corev1.EnvVar
		want    []criconfig.EnvVar
		wantErr string
		errIs   error
	}{
		{name: "successful file key reference",
			env:  []corev1.EnvVar{fileKeyRef("DATABASE", "config-volume", "database.env", "DATABASE", nil)},
			want: []criconfig.EnvVar{{Name: "DATABASE", Value: "mydb"}}},
		{name: "file key reference with comments and empty lines",
			setup: func() { config("# This is a comment\n\nDATABASE='mydb'\nAPI_KEY='secret123'\n\n# Another comment\n") },
			env:   []corev1.EnvVar{fileKeyRef("API_KEY", "config-volume", "config.env", "API_KEY", nil)},
			want:  []criconfig.EnvVar{{Name: "API_KEY", Value: "secret123"}}},
		{name: "file key reference with spaces around equals sign",
			env:     []corev1.EnvVar{fileKeyRef("DEBUG_MODE", "config-volume", "debug.env", "DEBUG_MODE", nil)},
			wantErr: "couldn't parse env file"},
		{name: "key not found in file",
			setup:   func() { config("EXISTING_KEY='value'\n") },
			env:     []corev1.EnvVar{fileKeyRef("MISSING_KEY", "config-volume", "config.env", "MISSING_KEY", nil)},
			wantErr: `environment variable key "MISSING_KEY" not found in file "` + filepath.Join(dir, "config.env") + `"`},
		{name: "key not found in file with optional flag",
			setup: func() { config("EXISTING_KEY='value'\n") },
			env:   []corev1.EnvVar{fileKeyRef("OPTIONAL_KEY", "config-volume", "config.env", "OPTIONAL_KEY", new(true))}},
		{name: "file does not exist",
			env:     []corev1.EnvVar{fileKeyRef("DATABASE", "config-volume", "nonexistent.env", "DATABASE", nil)},
			wantErr: "couldn't parse env file", errIs: fs.ErrNotExist},
		{name: "volume not found",
			env:     []corev1.EnvVar{fileKeyRef("DATABASE", "nonexistent-volume", "database.env", "DATABASE", nil)},
			wantErr: `cannot find the volume "nonexistent-volume" referenced by FileKeyRef`},
		{name: "volume mounter is nil",
			env:     []corev1.EnvVar{fileKeyRef("DATABASE", "unmounted", "database.env", "DATABASE", nil)},
			wantErr: `cannot find the volume "unmounted" referenced by FileKeyRef`},
		{name: "multiple file key references",
			env: []corev1.EnvVar{fileKeyRef("DATABASE", "config-volume", "database.env", "DATABASE", nil),
				fileKeyRef("API_KEY", "config-volume", "api.env", "API_KEY", nil)},
			want: []criconfig.EnvVar{{Name: "DATABASE", Value: "mydb"}, {Name: "API_KEY", Value: "secret123"}}},
		{name: "mixed environment variable sources",
			setup: func() { config("FILE_VAR='file_value'\n") },
			env:   []corev1.EnvVar{{Name: "STATIC_VAR", Value: "static_value"}, fileKeyRef("FILE_VAR", "config-volume", "config.env", "FILE_VAR", nil)},
			want:  []criconfig.EnvVar{{Name: "STATIC_VAR", Value: "static_value"}, {Name: "FILE_VAR", Value: "file_value"}}},

		// kubelet's code, beyond its test.
		{name: "an empty value reads as a missing key, as in kubelet",
			env:     []corev1.EnvVar{fileKeyRef("EMPTY", "config-volume", "empty.env", "EMPTY", nil)},
			wantErr: `environment variable key "EMPTY" not found in file`},
		{name: "an optional empty value is left out, and a blank after = is empty",
			env: []corev1.EnvVar{{Name: "BLANK", Value: "before"}, fileKeyRef("EMPTY", "config-volume", "empty.env", "EMPTY", new(true)),
				fileKeyRef("BLANK", "config-volume", "empty.env", "BLANK", new(true))},
			want: []criconfig.EnvVar{{Name: "BLANK", Value: "before"}}},
		{name: "optional does not excuse a missing file",
			env:     []corev1.EnvVar{fileKeyRef("DATABASE", "config-volume", "nonexistent.env", "DATABASE", new(true))},
			wantErr: "couldn't parse env file"},
		{name: "a value from a file expands nothing, and later values expand it",
			setup: func() { config("X='$(STATIC)-$HOME'\n") },
			env:   []corev1.EnvVar{{Name: "STATIC", Value: "s"}, fileKeyRef("X", "config-volume", "config.env", "X", nil), {Name: "Y", Value: "<$(X)>"}},
			want:  []criconfig.EnvVar{{Name: "STATIC", Value: "s"}, {Name: "X", Value: "$(STATIC)-$HOME"}, {Name: "Y", Value: "<$(STATIC)-$HOME>"}}},
		{name: "a path out of the volume stays inside it",
			env:     []corev1.EnvVar{fileKeyRef("H", "config-volume", "../../../../../../etc/hostname", "H", nil)},
			wantErr: "couldn't parse env file", errIs: fs.ErrNotExist},
		{name: "a link out of the volume resolves inside it",
			env:     []corev1.EnvVar{fileKeyRef("H", "config-volume", "link.env", "H", nil)},
			wantErr: "couldn't parse env file", errIs: fs.ErrNotExist},
		{name: "a volume that is not an emptyDir is refused, as the API server refuses it",
			env:     []corev1.EnvVar{fileKeyRef("DATABASE", "host", "database.env", "DATABASE", nil)},
			wantErr: `environment variable "DATABASE" of container "app": fileKeyRef volume "host": referenced volume must be of type emptyDir`, errIs: podsync.ErrNotEmptyDir},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "test-pod", Namespace: "test-namespace", UID: "test-pod-uid"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "config-volume", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "unmounted", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}},
		}}}
	s := podsync.NewSyncer(fake.New(), nil, podsync.WithRootDir(t.TempDir()), podsync.WithVolumes(vols))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup()
			}
			c := &corev1.Container{Name: "app", Env: tt.env}
			got, err := s.Environment(context.Background(), pod, c, []string{"192.168.1.1"})
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
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
			if len(got) != 0 || len(tt.want) != 0 {
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("env\n got %v\nwant %v", got, tt.want)
				}
			}
		})
	}
}

// A file that cannot be parsed is an *EnvFileError with kubelet's message;
// the reason is beneath it and in an error log line, as kubelet logs it.
func TestEnvironmentFileKeyRefError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.env"), []byte("A='1'\nB=unquoted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
	var logged []string
	ctx := logr.NewContext(context.Background(), funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{}))
	s := podsync.NewSyncer(fake.New(), nil, podsync.WithRootDir(t.TempDir()), podsync.WithVolumes(volumesAt{"v": {HostPath: dir}}))
	_, err := s.Environment(ctx, pod, &corev1.Container{Name: "app", Env: []corev1.EnvVar{fileKeyRef("B", "v", "bad.env", "B", new(true))}}, nil)
	var fe *podsync.EnvFileError
	if !errors.As(err, &fe) || err.Error() != "couldn't parse env file" || fe.Path != filepath.Join(dir, "bad.env") ||
		fe.Err.Error() != "invalid environment variable format at line 2: value must be enclosed in single quotes" {
		t.Fatalf("error %v (%#v)", err, fe)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], `"msg"="Failed to parse env file"`) || !strings.Contains(logged[0], "at line 2") {
		t.Fatalf("logged %q", logged)
	}
}

// Within one sync the volumes are resolved once, and only when a
// container needs them: a fileKeyRef before the mounts.
func TestEnvironmentFileKeyRefInSync(t *testing.T) {
	h := newHarness(t, false, nil)
	dir := filepath.Join(h.root, "pods", "uid-f", "volumes", "kubernetes.io~empty-dir", "cfg")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.env"), []byte("MODE='fast'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "f", Namespace: "ns", UID: "uid-f"},
		Spec: corev1.PodSpec{
			Volumes:    []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{{Name: "app", Image: "busybox", Env: []corev1.EnvVar{fileKeyRef("MODE", "cfg", "app.env", "MODE", nil)}}},
		}}
	if err := h.syncer.SyncPod(context.Background(), pod, &podsync.PodStatus{}, nil).Error(); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, call := range h.fake.Calls() {
		if req, ok := call.Request.(*runtimeapi.CreateContainerRequest); ok {
			for _, kv := range req.Config.Envs {
				env = append(env, kv.Key+"="+string(kv.Value))
			}
		}
	}
	if !reflect.DeepEqual(env, []string{"MODE=fast"}) {
		t.Fatalf("env %v", env)
	}
}

// serviceTable is a resolver that also answers service variables.
type serviceTable struct {
	envTable
	services map[string]string
	err      error
	asked    *int
}

func (r serviceTable) ServiceEnv(context.Context, *corev1.Pod) (map[string]string, error) {
	*r.asked++
	return r.services, r.err
}

// Service variables (kubelet's serviceEnv): usable in $(VAR) after the
// container's own variables, overridden by envFrom and env, added last in
// name order; an error fails the environment.
func TestEnvironmentServices(t *testing.T) {
	asked := 0
	r := serviceTable{
		envTable: envTable{sources: map[string]map[string]string{"a": {"B_SERVICE_HOST": "from-cm"}}},
		services: map[string]string{"B_SERVICE_HOST": "10.0.0.2", "A_SERVICE_HOST": "10.0.0.1", "A_SERVICE_PORT": "80", "Z": "svc"},
		asked:    &asked,
	}
	s := podsync.NewSyncer(fake.New(), nil, podsync.WithEnvResolver(r), podsync.WithRootDir(t.TempDir()))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"}}
	c := &corev1.Container{Name: "app", EnvFrom: []corev1.EnvFromSource{fromCM("", "a")},
		Env: []corev1.EnvVar{{Name: "URL", Value: "$(A_SERVICE_HOST):$(A_SERVICE_PORT)/$(B_SERVICE_HOST)"}, {Name: "Z", Value: "mine"}}}
	got, err := s.Environment(context.Background(), pod, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []criconfig.EnvVar{{Name: "B_SERVICE_HOST", Value: "from-cm"}, {Name: "URL", Value: "10.0.0.1:80/from-cm"}, {Name: "Z", Value: "mine"},
		{Name: "A_SERVICE_HOST", Value: "10.0.0.1"}, {Name: "A_SERVICE_PORT", Value: "80"}}
	if !reflect.DeepEqual(got, want) || asked != 1 {
		t.Fatalf("env %v (asked %d times)\nwant %v", got, asked, want)
	}
	r.err = errors.New("failed to list services when setting up env vars")
	s = podsync.NewSyncer(fake.New(), nil, podsync.WithEnvResolver(r), podsync.WithRootDir(t.TempDir()))
	if _, err := s.Environment(context.Background(), pod, c, nil); err != r.err {
		t.Fatalf("error %v, want the resolver's", err)
	}
}
