package mounts

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/validation"
)

// memDisk records side effects without touching the file system.
type memDisk struct {
	files   map[string][]byte
	mkdirs  []string
	failMk  error
	termErr error
}

func newMemDisk() *memDisk {
	return &memDisk{files: map[string][]byte{"/etc/hosts": []byte("127.0.0.1\tnode\n")}}
}

func (d *memDisk) MakeSubPathDir(root, sub string) error {
	d.mkdirs = append(d.mkdirs, root+"/"+sub)
	return d.failMk
}
func (d *memDisk) ResolveSubPath(root, sub string) (string, error) { return root + "/" + sub, nil }
func (d *memDisk) WriteFile(name string, data []byte, _ fs.FileMode) error {
	d.files[name] = data
	return nil
}
func (d *memDisk) ReadFile(name string) ([]byte, error) {
	if b, ok := d.files[name]; ok {
		return b, nil
	}
	return nil, fs.ErrNotExist
}
func (d *memDisk) CreateTerminationFile(dir string) (string, error) {
	if d.termErr != nil {
		return "", d.termErr
	}
	return dir + "/0123abcd", nil
}

func ptr[T any](v T) *T { return &v }

// pod is a valid pod whose one container, app, has mounts; its volumes
// are testVolumes.
func pod(mounts ...corev1.VolumeMount) (*corev1.Pod, *corev1.Container) {
	c := corev1.Container{Name: "app", Image: "registry.example/app:1", VolumeMounts: mounts}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid1"},
		Spec: corev1.PodSpec{Volumes: testVolumes(), Containers: []corev1.Container{c}}}
	return p, &p.Spec.Containers[0]
}

// testVolumes are the volumes of every test pod: those of the VolumeMap
// volumes, each of a type kubelet gives those attributes (data a hostPath,
// forced a Secret, mounted read-only, label an emptyDir, relabelled); v,
// which the disk tests map to a real directory; and unmapped, which no
// VolumeMap has (a volume its caller did not set up).
func testVolumes() []corev1.Volume {
	return []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/v/data"}}},
		{Name: "forced", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "forced"}}},
		{Name: "label", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "unmapped", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
}

var volumes = VolumeMap{
	"data":   {HostPath: "/v/data"},
	"forced": {HostPath: "/v/forced", ReadOnly: true},
	"label":  {HostPath: "/v/label", SELinuxRelabel: true},
}

// TestMakeRules: kubelet's rules for one volumeMount. A mount the API
// server refuses (invalid: its field and message) is refused by Make as an
// invalid pod before any of them runs; makeOne, which Make runs once the
// pod is checked, still refuses it with kubelet's own error (wantErr,
// errText), the defence for a pod that got past the check.
func TestMakeRules(t *testing.T) {
	t.Parallel()
	private := PropagationPrivate
	tests := []struct {
		name       string
		vm         corev1.VolumeMount
		privileged bool // Bidirectional propagation needs a privileged container
		env        map[string]string
		want       Mount
		wantErr    error
		errText    string
		invalid    string // what validation.Check names, for a mount the API server refuses
	}{
		{name: "plain", vm: corev1.VolumeMount{Name: "data", MountPath: "/data"}, want: Mount{Name: "data", ContainerPath: "/data", HostPath: "/v/data", Propagation: private}},
		{name: "relative container path made absolute", vm: corev1.VolumeMount{Name: "data", MountPath: "bar"}, want: Mount{Name: "data", ContainerPath: "/bar", HostPath: "/v/data", Propagation: private}},
		{name: "relative container path cleaned", vm: corev1.VolumeMount{Name: "data", MountPath: "a/../b/"}, want: Mount{Name: "data", ContainerPath: "/b", HostPath: "/v/data", Propagation: private}},
		{name: "read-only from the mount", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", ReadOnly: true}, want: Mount{Name: "data", ContainerPath: "/d", HostPath: "/v/data", ReadOnly: true, Propagation: private}},
		{name: "read-only forced by the volume", vm: corev1.VolumeMount{Name: "forced", MountPath: "/d"}, want: Mount{Name: "forced", ContainerPath: "/d", HostPath: "/v/forced", ReadOnly: true, Propagation: private}},
		{name: "selinux relabel from the volume", vm: corev1.VolumeMount{Name: "label", MountPath: "/d"}, want: Mount{Name: "label", ContainerPath: "/d", HostPath: "/v/label", SELinuxRelabel: true, Propagation: private}},
		{name: "propagation None", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", MountPropagation: ptr(corev1.MountPropagationNone)}, want: Mount{Name: "data", ContainerPath: "/d", HostPath: "/v/data", Propagation: private}},
		{name: "propagation HostToContainer", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", MountPropagation: ptr(corev1.MountPropagationHostToContainer)}, want: Mount{Name: "data", ContainerPath: "/d", HostPath: "/v/data", Propagation: PropagationHostToContainer}},
		{name: "propagation Bidirectional", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", MountPropagation: ptr(corev1.MountPropagationBidirectional)}, privileged: true, want: Mount{Name: "data", ContainerPath: "/d", HostPath: "/v/data", Propagation: PropagationBidirectional}},
		{name: "propagation invalid", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", MountPropagation: ptr(corev1.MountPropagationMode("Sideways"))}, wantErr: ErrInvalidPropagation, errText: `invalid MountPropagation mode: "Sideways"`, invalid: `spec.containers[0].volumeMounts.mountPropagation: Unsupported value: "Sideways"`},
		{name: "missing volume", vm: corev1.VolumeMount{Name: "nope", MountPath: "/d"}, wantErr: ErrVolumeNotFound, errText: `cannot find volume "nope" to mount into container "app"`, invalid: `spec.containers[0].volumeMounts[0].name: Not found: "nope"`},
		{name: "volume of the pod not set up", vm: corev1.VolumeMount{Name: "unmapped", MountPath: "/d"}, wantErr: ErrVolumeNotFound, errText: `cannot find volume "unmapped" to mount into container "app"`},
		{name: "empty volume name", vm: corev1.VolumeMount{MountPath: "/d"}, wantErr: ErrVolumeNotFound, errText: "has no volume name", invalid: "spec.containers[0].volumeMounts[0].name: Required value"},
		{name: "subPath", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", SubPath: "a/b"}, want: Mount{Name: "data", ContainerPath: "/d", HostPath: "/v/data/a/b", Propagation: private}},
		{name: "subPath ..foo allowed", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", SubPath: "..foo/a..b"}, want: Mount{Name: "data", ContainerPath: "/d", HostPath: "/v/data/..foo/a..b", Propagation: private}},
		{name: "subPath absolute", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", SubPath: "/etc"}, wantErr: ErrInvalidSubPath, errText: "error SubPath `/etc` must not be an absolute path", invalid: `spec.containers[0].volumeMounts.subPath: Invalid value: "/etc": must be a relative path`},
		{name: "subPath .. first", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", SubPath: "../x"}, wantErr: ErrInvalidSubPath, errText: "unable to provision SubPath `../x`: must not contain '..'", invalid: `spec.containers[0].volumeMounts.subPath: Invalid value: "../x": must not contain '..'`},
		{name: "subPath .. middle", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", SubPath: "a/../../x"}, wantErr: ErrInvalidSubPath, invalid: `spec.containers[0].volumeMounts.subPath: Invalid value: "a/../../x": must not contain '..'`},
		{name: "subPath .. last", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", SubPath: "a/.."}, wantErr: ErrInvalidSubPath, invalid: `spec.containers[0].volumeMounts.subPath: Invalid value: "a/..": must not contain '..'`},
		{name: "subPath .. alone", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", SubPath: ".."}, wantErr: ErrInvalidSubPath, invalid: `spec.containers[0].volumeMounts.subPath: Invalid value: "..": must not contain '..'`},
		{name: "subPath NUL", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", SubPath: "a\x00b"}, wantErr: ErrInvalidSubPath},
		{name: "subPathExpr", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", SubPathExpr: "logs/$(POD)"}, env: map[string]string{"POD": "web"}, want: Mount{Name: "data", ContainerPath: "/d", HostPath: "/v/data/logs/web", Propagation: private}},
		{name: "subPathExpr missing and empty, sorted", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", SubPathExpr: "$(Z)/$(A)/$(E)"}, env: map[string]string{"E": ""}, wantErr: ErrInvalidSubPath, errText: "missing value for A, E, Z"},
		{name: "subPathExpr expanding to ..", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", SubPathExpr: "$(P)"}, env: map[string]string{"P": "../up"}, wantErr: ErrInvalidSubPath},
		{name: "subPathExpr expanding to absolute", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", SubPathExpr: "$(P)"}, env: map[string]string{"P": "/abs"}, wantErr: ErrInvalidSubPath},
		{name: "rro without read-only", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", RecursiveReadOnly: ptr(corev1.RecursiveReadOnlyEnabled)}, wantErr: ErrRecursiveReadOnly, errText: `volume "data" requested recursive read-only mode, but it is not read-only`, invalid: "spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true"},
		{name: "rro with propagation", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", ReadOnly: true, RecursiveReadOnly: ptr(corev1.RecursiveReadOnlyEnabled), MountPropagation: ptr(corev1.MountPropagationHostToContainer)}, wantErr: ErrRecursiveReadOnly, errText: `not compatible with propagation "HostToContainer"`, invalid: "spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified"},
		{name: "rro enabled supported", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", ReadOnly: true, RecursiveReadOnly: ptr(corev1.RecursiveReadOnlyEnabled)}, want: Mount{Name: "data", ContainerPath: "/d", HostPath: "/v/data", ReadOnly: true, RecursiveReadOnly: true, Propagation: private}},
		{name: "rro if possible", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", ReadOnly: true, RecursiveReadOnly: ptr(corev1.RecursiveReadOnlyIfPossible)}, want: Mount{Name: "data", ContainerPath: "/d", HostPath: "/v/data", ReadOnly: true, RecursiveReadOnly: true, Propagation: private}},
		{name: "rro disabled", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", RecursiveReadOnly: ptr(corev1.RecursiveReadOnlyDisabled)}, want: Mount{Name: "data", ContainerPath: "/d", HostPath: "/v/data", Propagation: private}},
		{name: "rro unknown", vm: corev1.VolumeMount{Name: "data", MountPath: "/d", ReadOnly: true, RecursiveReadOnly: ptr(corev1.RecursiveReadOnlyMode("Maybe"))}, wantErr: ErrRecursiveReadOnly, errText: `unknown recursive read-only mode "Maybe"`, invalid: `spec.containers[0].volumeMounts.recursiveReadOnly: Unsupported value: "Maybe"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, c := pod(tt.vm)
			if tt.privileged {
				c.SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
			}
			req := Request{Pod: p, Container: c, Volumes: volumes, Env: tt.env}
			got, err := Make(context.Background(), req, WithDisk(newMemDisk()), WithRecursiveReadOnlySupport(true))
			if tt.invalid != "" {
				if !errors.Is(err, validation.ErrInvalidPod) || !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), tt.invalid) {
					t.Fatalf("err = %v, want an invalid pod naming %q", err, tt.invalid)
				}
				disk := newMemDisk()
				_, err = makeOne(&c.VolumeMounts[0], c, req, disk, true)
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("makeOne: err = %v, want %v containing %q", err, tt.wantErr, tt.errText)
				}
				if len(disk.mkdirs) != 0 {
					t.Fatalf("makeOne made %v for a refused mount", disk.mkdirs)
				}
				return
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want %v containing %q", err, tt.wantErr, tt.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0] != tt.want {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestRecursiveReadOnlyUnsupported(t *testing.T) {
	t.Parallel()
	for mode, want := range map[corev1.RecursiveReadOnlyMode]bool{corev1.RecursiveReadOnlyIfPossible: false, corev1.RecursiveReadOnlyEnabled: true} {
		p, c := pod(corev1.VolumeMount{Name: "data", MountPath: "/d", ReadOnly: true, RecursiveReadOnly: ptr(mode)})
		got, err := Make(context.Background(), Request{Pod: p, Container: c, Volumes: volumes}, WithDisk(newMemDisk()))
		if want != (err != nil) {
			t.Fatalf("%s: %v %v", mode, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "not supported by the runtime") {
			t.Fatalf("%s: %v", mode, err)
		}
		if err == nil && got[0].RecursiveReadOnly {
			t.Fatalf("%s: RRO without support", mode)
		}
	}
}

func TestMakeOrderHostsAndTermination(t *testing.T) {
	t.Parallel()
	p, c := pod(corev1.VolumeMount{Name: "label", MountPath: "/a"}, corev1.VolumeMount{Name: "label", MountPath: "/b"})
	c.TerminationMessagePath = "/dev/termination-log"
	d := newMemDisk()
	got, err := Make(context.Background(), Request{Pod: p, Container: c, Volumes: volumes, PodDir: "/pods/uid1", PodIPs: []string{"10.0.0.5"}}, WithDisk(d))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, m := range got {
		paths = append(paths, m.ContainerPath)
	}
	if want := []string{"/a", "/b", "/etc/hosts", "/dev/termination-log"}; !reflect.DeepEqual(paths, want) {
		t.Fatalf("order %v, want %v", paths, want)
	}
	// Every mount of a relabel-capable volume asks for relabelling (kubelet's
	// "already labelled" mark never takes effect).
	if !got[0].SELinuxRelabel || !got[1].SELinuxRelabel {
		t.Fatal("second mount of a relabel volume not relabelled")
	}
	hosts := got[2]
	if hosts.Name != EtcHostsVolumeName || hosts.HostPath != "/pods/uid1/etc-hosts" || hosts.ReadOnly || !hosts.SELinuxRelabel {
		t.Fatalf("hosts mount %+v", hosts)
	}
	if !strings.Contains(string(d.files["/pods/uid1/etc-hosts"]), "10.0.0.5\tweb\n") {
		t.Fatalf("hosts file %q", d.files["/pods/uid1/etc-hosts"])
	}
	if term := got[3]; term.HostPath != "/pods/uid1/containers/app/0123abcd" || term.ReadOnly {
		t.Fatalf("termination mount %+v", term)
	}
	if !got[2].SELinuxRelabel || !got[3].SELinuxRelabel || got[2].HostPath != "/pods/uid1/etc-hosts" {
		t.Fatalf("relabel requests: %+v", got)
	}
}

func TestHostsMountRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		ips         []string
		hostNetwork bool
		ownHosts    bool
		want        bool
	}{
		{"pod IP", []string{"10.0.0.5"}, false, false, true},
		{"no IP, pod network", nil, false, false, false},
		{"host network without IP (v1.31+)", nil, true, false, true},
		{"container mounts /etc/hosts itself", []string{"10.0.0.5"}, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var vms []corev1.VolumeMount
			if tt.ownHosts {
				vms = append(vms, corev1.VolumeMount{Name: "data", MountPath: "/etc/hosts"})
			}
			p, c := pod(vms...)
			p.Spec.HostNetwork = tt.hostNetwork
			got, err := Make(context.Background(), Request{Pod: p, Container: c, Volumes: volumes, PodDir: "/pods/x", PodIPs: tt.ips}, WithDisk(newMemDisk()))
			if err != nil {
				t.Fatal(err)
			}
			has := false
			for _, m := range got {
				has = has || m.Name == EtcHostsVolumeName
			}
			if has != tt.want {
				t.Fatalf("hosts mounted = %v, want %v (%+v)", has, tt.want, got)
			}
		})
	}
}

func TestTerminationFileFailureDropsOnlyThatMount(t *testing.T) {
	t.Parallel()
	p, c := pod(corev1.VolumeMount{Name: "data", MountPath: "/d"})
	c.TerminationMessagePath = "/dev/termination-log"
	d := newMemDisk()
	d.termErr = errors.New("disk full")
	got, err := Make(context.Background(), Request{Pod: p, Container: c, Volumes: volumes, PodDir: "/pods/x"}, WithDisk(d))
	if err != nil || len(got) != 1 {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestSubPathCreateErrorHidesDetails(t *testing.T) {
	t.Parallel()
	p, c := pod(corev1.VolumeMount{Name: "data", MountPath: "/d", SubPath: "x"})
	d := newMemDisk()
	d.failMk = errors.New("permission denied on /secret/place")
	_, err := Make(context.Background(), Request{Pod: p, Container: c, Volumes: volumes}, WithDisk(d))
	if err == nil || err.Error() != `failed to create subPath directory for volumeMount "data" of container "app"` || !errors.Is(err, ErrSubPath) || !errors.Is(err, d.failMk) {
		t.Fatalf("err = %v", err)
	}
}

func TestHostnameAndDomain(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 62) + "-b"
	tests := []struct {
		name, hostname, subdomain string
		override                  *string
		wantHost, wantDomain      string
		wantErr                   string
	}{
		{"web", "", "", nil, "web", "", ""},
		{"web", "custom", "", nil, "custom", "", ""},
		{"web", "", "sub", nil, "web", "sub.shop.svc.cluster.local", ""},
		{long, "", "", nil, strings.Repeat("a", 62), "", ""},
		{strings.Repeat("a", 61) + ".-x", "", "", nil, strings.Repeat("a", 61), "", ""},
		{"web", "Bad_Name", "", nil, "", "", `pod Hostname "Bad_Name" is not a valid DNS label`},
		{"web", "", "a.b", nil, "", "", `pod Subdomain "a.b" is not a valid DNS label`},
		{"web", "custom", "sub", ptr("node-a.example.com"), "node-a.example.com", "", ""},
		{"web", "", "", ptr("-bad"), "", "", `pod HostnameOverride "-bad" is not a valid DNS subdomain`},
	}
	for _, tt := range tests {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tt.name, Namespace: "shop"}, Spec: corev1.PodSpec{Hostname: tt.hostname, Subdomain: tt.subdomain, HostnameOverride: tt.override}}
		h, d, err := HostnameAndDomain(p, "cluster.local")
		if tt.wantErr != "" {
			if !errors.Is(err, ErrInvalidHostname) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || h != tt.wantHost || d != tt.wantDomain {
			t.Errorf("%s: %q %q %v, want %q %q", tt.name, h, d, err, tt.wantHost, tt.wantDomain)
		}
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s differs:\n got: %q\nwant: %q", name, got, want)
	}
}

func TestHostsFileGolden(t *testing.T) {
	t.Parallel()
	aliases := []corev1.HostAlias{{IP: "123.45.67.89", Hostnames: []string{"foo", "bar", "baz"}}, {IP: "fd00::1", Hostnames: []string{"v6"}}}
	got, err := HostsFileContent("web", "", []string{"10.0.0.5", "fd00::5"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "hosts-pod-network.golden", got)
	got, err = HostsFileContent("web", "sub.shop.svc.cluster.local", []string{"10.0.0.5"}, aliases)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "hosts-domain-aliases.golden", got)
	got, err = NodeHostsFileContent([]byte("127.0.0.1\tlocalhost\n192.0.2.1\tnode-1\n"), aliases[:1])
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "hosts-host-network.golden", got)
}

func TestHostsFileRefusesInjection(t *testing.T) {
	t.Parallel()
	bad := []corev1.HostAlias{
		{IP: "10.0.0.1", Hostnames: []string{"ok\n1.2.3.4 evil"}},
		{IP: "10.0.0.1", Hostnames: []string{"two words"}},
		{IP: "10.0.0.1", Hostnames: []string{"tab\there"}},
		{IP: "10.0.0.1", Hostnames: []string{""}},
		{IP: "10.0.0.1", Hostnames: []string{"#comment"}},
		{IP: "10.0.0.1\n1.2.3.4", Hostnames: []string{"x"}},
		{IP: "not-an-ip", Hostnames: []string{"x"}},
	}
	for _, a := range bad {
		if _, err := HostsFileContent("web", "", nil, []corev1.HostAlias{a}); !errors.Is(err, ErrInvalidHostAlias) {
			t.Errorf("alias %q accepted: %v", a, err)
		}
	}
	if _, err := HostsFileContent("web\nevil", "", nil, nil); !errors.Is(err, ErrInvalidHostAlias) {
		t.Error("hostname with newline accepted")
	}
}

func TestDockerBinds(t *testing.T) {
	t.Parallel()
	mounts := []Mount{
		{HostPath: "/mnt/8", ContainerPath: "/var/lib/mysql/8", ReadOnly: true, SELinuxRelabel: true, Propagation: PropagationBidirectional},
		{HostPath: "/mnt/5", ContainerPath: "/var/lib/mysql/5", Propagation: PropagationHostToContainer},
		{HostPath: "/mnt/1", ContainerPath: "/data"},
		{HostPath: "/mnt/2", ContainerPath: "/ro", ReadOnly: true},
		{HostPath: "/mnt/3", ContainerPath: "/z", SELinuxRelabel: true, Propagation: Propagation(99)},
	}
	if off, _ := DockerBinds(mounts[:1], false); off[0] != "/mnt/8:/var/lib/mysql/8:ro,rshared" {
		t.Fatalf("SELinux off: %q", off)
	}
	got, err := DockerBinds(mounts, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/mnt/8:/var/lib/mysql/8:ro,Z,rshared", "/mnt/5:/var/lib/mysql/5:rslave", "/mnt/1:/data", "/mnt/2:/ro:ro", "/mnt/3:/z:Z"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	for _, bad := range []Mount{{HostPath: "/a", ContainerPath: "/b:c"}, {HostPath: "/a:b", ContainerPath: "/c"}, {HostPath: "", ContainerPath: "/c"}, {HostPath: "/a", ContainerPath: "/b,ro"}} {
		if _, err := DockerBinds([]Mount{bad}, true); !errors.Is(err, ErrInvalidBind) {
			t.Errorf("%v accepted: %v", bad, err)
		}
	}
}

func TestDockerMounts(t *testing.T) {
	t.Parallel()
	got, err := DockerMounts([]Mount{
		{HostPath: "/a", ContainerPath: "/a", ReadOnly: true},
		{HostPath: "/b", ContainerPath: "/b", ReadOnly: true, RecursiveReadOnly: true},
		{HostPath: "/c", ContainerPath: "/c", Propagation: PropagationHostToContainer},
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].ReadOnlyNonRecursive || got[1].ReadOnlyNonRecursive || got[2].Propagation != "rslave" || got[2].ReadOnly || !got[0].CreateMountpoint {
		t.Fatalf("got %+v", got)
	}
	// cri-dockerd's order of checks: handler support, propagation, then
	// read-write.
	for _, c := range []struct {
		m         Mount
		supported bool
		want      string
	}{
		{Mount{HostPath: "/a", ContainerPath: "/a", RecursiveReadOnly: true, Propagation: PropagationBidirectional}, false, "not supported by the runtime handler"},
		{Mount{HostPath: "/a", ContainerPath: "/a", RecursiveReadOnly: true, Propagation: PropagationBidirectional}, true, "needs private propagation"},
		{Mount{HostPath: "/a", ContainerPath: "/a", RecursiveReadOnly: true}, true, "conflicts with RW mount"},
	} {
		if _, err := DockerMounts([]Mount{c.m}, c.supported); !errors.Is(err, ErrRecursiveReadOnly) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v (supported %v): %v, want %q", c.m, c.supported, err, c.want)
		}
	}
}

func TestEmptyVolumePathRefused(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: corev1.PodSpec{
			Volumes:    []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1", VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}}},
		}}
	_, err := Make(context.Background(), Request{Pod: pod, Container: &pod.Spec.Containers[0], Volumes: VolumeMap{"v": {}}})
	if !errors.Is(err, ErrVolumeNotFound) || !strings.Contains(err.Error(), "path is empty") {
		t.Fatalf("empty host path: %v", err)
	}
}

// An absolute symlink inside a volume that names the volume by its host
// path stays inside it, and is followed as kubelet follows it; one that
// leaves the volume is refused.
func TestAbsoluteSymlinkInsideVolume(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"pods/ns_p_u/app", "containers"} {
		if err := os.MkdirAll(filepath.Join(real, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(real, "pods/ns_p_u/app/0.log")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(real, "containers/x.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(real, "containers/out.log")); err != nil {
		t.Fatal(err)
	}
	got, err := OSDisk{}.ResolveSubPath(root, "containers/x.log")
	if err != nil || got != target {
		t.Fatalf("in-volume absolute link: %q, %v; want %q", got, err, target)
	}
	if _, err := (OSDisk{}).ResolveSubPath(root, "containers/out.log"); !errors.Is(err, ErrSubPathEscape) {
		t.Fatalf("link out of the volume: %v", err)
	}
}

// An image volume's mount names the image and its subPath inside the
// image, with no host path and nothing made on the host; a subPath that
// is absolute or climbs out is refused as for any volume.
func TestImageVolumeMount(t *testing.T) {
	t.Parallel()
	p, c := pod(corev1.VolumeMount{Name: "img", MountPath: "/v", SubPath: "etc"})
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "kitten:1", PullPolicy: corev1.PullAlways}}})
	vols := VolumeMap{"img": {ReadOnly: true, Image: &ImageVolume{Ref: "sha256:abc", Requested: "kitten:1"}}}
	disk := newMemDisk()
	got, err := Make(context.Background(), Request{Pod: p, Container: c, Volumes: vols}, WithDisk(disk), WithoutTerminationMessage())
	if err != nil {
		t.Fatal(err)
	}
	m := got[0]
	if m.HostPath != "" || m.Image == nil || m.Image.Ref != "sha256:abc" || m.ImageSubPath != "etc" || !m.ReadOnly || m.ContainerPath != "/v" {
		t.Fatalf("mount %+v", m)
	}
	if len(disk.mkdirs) != 0 {
		t.Fatalf("subPath made on the host for an image volume: %v", disk.mkdirs)
	}
	for _, sub := range []string{"/etc", "../x", "a/../../x"} {
		c.VolumeMounts[0].SubPath = sub
		if _, err := Make(context.Background(), Request{Pod: p, Container: c, Volumes: vols}, WithDisk(disk), WithCheckedPod()); err == nil {
			t.Errorf("subPath %q accepted for an image volume", sub)
		}
	}
	delete(vols, "img")
	vols["img"] = Volume{Image: &ImageVolume{}}
	c.VolumeMounts[0].SubPath = ""
	if _, err := Make(context.Background(), Request{Pod: p, Container: c, Volumes: vols}, WithDisk(disk)); !errors.Is(err, ErrVolumeNotFound) {
		t.Fatalf("an image volume with no image: %v, want ErrVolumeNotFound", err)
	}
}
