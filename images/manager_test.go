package images

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/credentials"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type recorder struct {
	mu     sync.Mutex
	events []string
	refs   []*corev1.ObjectReference
}

func (r *recorder) Eventf(obj apiruntime.Object, typ, reason, format string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, typ+" "+reason+" "+fmt.Sprintf(format, args...))
	r.refs = append(r.refs, obj.(*corev1.ObjectReference))
}

func (r *recorder) reasons() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, strings.SplitN(e, " ", 3)[1])
	}
	return out
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events, r.refs = nil, nil
}

func testPod(image string, policy corev1.PullPolicy) (*corev1.Pod, *corev1.Container) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1", Annotations: map[string]string{"a": "b"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image, ImagePullPolicy: policy}}},
	}
	return p, &p.Spec.Containers[0]
}

// TestPolicyPresenceBackOff is the matrix of pull policy, image presence
// and back-off, with kubelet's results, messages and events in order.
func TestPolicyPresenceBackOff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		policy    corev1.PullPolicy
		present   bool
		failPull  bool
		inBackOff bool
		wantErr   error
		wantMsg   string
		events    []string
		pulls     int
	}{
		{name: "Always, absent: pull", policy: corev1.PullAlways, events: []string{"Pulling", "Pulled"}, pulls: 1},
		{name: "Always, present: pull anyway", policy: corev1.PullAlways, present: true, events: []string{"Pulling", "Pulled"}, pulls: 1},
		{name: "IfNotPresent, absent: pull", policy: corev1.PullIfNotPresent, events: []string{"Pulling", "Pulled"}, pulls: 1},
		{name: "IfNotPresent, present: no pull", policy: corev1.PullIfNotPresent, present: true, wantMsg: `Container image "busybox:1.35" already present on machine`, events: []string{"Pulled"}},
		{name: "Never, present: no pull", policy: corev1.PullNever, present: true, wantMsg: `Container image "busybox:1.35" already present on machine`, events: []string{"Pulled"}},
		{name: "Never, absent: ErrImageNeverPull", policy: corev1.PullNever, wantErr: ErrImageNeverPull, wantMsg: `Container image "busybox:1.35" is not present with pull policy of Never`, events: []string{"ErrImageNeverPull"}},
		{name: "empty policy: treated as absent, pulled", policy: "", present: true, events: []string{"Pulling", "Pulled"}, pulls: 1},
		{name: "Always, pull fails: ErrImagePull", policy: corev1.PullAlways, failPull: true, wantErr: ErrImagePull, wantMsg: "rpc error: code = Unknown desc = boom", events: []string{"Pulling", "Failed"}, pulls: 1},
		{name: "IfNotPresent, absent, pull fails", policy: corev1.PullIfNotPresent, failPull: true, wantErr: ErrImagePull, wantMsg: "rpc error: code = Unknown desc = boom", events: []string{"Pulling", "Failed"}, pulls: 1},
		{name: "Always, in back-off: no pull", policy: corev1.PullAlways, inBackOff: true, wantErr: ErrImagePullBackOff, wantMsg: `Back-off pulling image "busybox:1.35": ErrImagePull: rpc error: code = Unknown desc = boom`, events: []string{"BackOff"}},
		{name: "IfNotPresent, absent, in back-off: no pull", policy: corev1.PullIfNotPresent, inBackOff: true, wantErr: ErrImagePullBackOff, wantMsg: `Back-off pulling image "busybox:1.35": ErrImagePull: rpc error: code = Unknown desc = boom`, events: []string{"BackOff"}},
		{name: "IfNotPresent, present, in back-off: present wins", policy: corev1.PullIfNotPresent, present: true, inBackOff: true, wantMsg: `Container image "busybox:1.35" already present on machine`, events: []string{"Pulled"}},
		{name: "Never, absent, in back-off: never pull wins", policy: corev1.PullNever, inBackOff: true, wantErr: ErrImageNeverPull, wantMsg: `Container image "busybox:1.35" is not present with pull policy of Never`, events: []string{"ErrImageNeverPull"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var opts []fake.Option
			if tt.present {
				opts = append(opts, fake.WithImages("busybox:1.35"))
			}
			rt := fake.New(opts...)
			rec := &recorder{}
			clk := testingclock.NewFakeClock(time.Unix(1000, 0))
			m := NewManager(rt, WithRecorder(rec), WithClock(clk))
			defer m.Close()
			pod, c := testPod("busybox:1.35", tt.policy)
			ctx := context.Background()
			if tt.inBackOff {
				stop := rt.Fail("PullImage", status.Error(codes.Unknown, "boom"))
				c2 := *c
				c2.ImagePullPolicy = corev1.PullAlways
				m.EnsureImageExists(ctx, pod, &c2, nil, nil)
				stop()
				rec.reset()
			}
			if tt.failPull {
				rt.Fail("PullImage", status.Error(codes.Unknown, "boom"))
			}
			rt.ResetCalls()
			ref, msg, err := m.EnsureImageExists(ctx, pod, c, nil, nil)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil && err.Error() != tt.wantErr.Error() {
				t.Fatalf("err text %q, want the sentinel's %q", err, tt.wantErr)
			}
			if tt.wantMsg != "" && msg != tt.wantMsg {
				t.Fatalf("message %q\nwant    %q", msg, tt.wantMsg)
			}
			if err == nil && ref == "" {
				t.Fatal("no image ref")
			}
			if got := rec.reasons(); !reflect.DeepEqual(got, tt.events) {
				t.Fatalf("events %v, want %v (%v)", got, tt.events, rec.events)
			}
			if got := rt.CallCount("PullImage"); got != tt.pulls {
				t.Fatalf("%d pulls, want %d", got, tt.pulls)
			}
		})
	}
}

func TestEventTextsAndRef(t *testing.T) {
	t.Parallel()
	rt := fake.New(fake.WithImageSize(1234))
	rec := &recorder{}
	m := NewManager(rt, WithRecorder(rec))
	defer m.Close()
	pod, c := testPod("busybox", corev1.PullAlways)
	ref, msg, err := m.EnsureImageExists(context.Background(), pod, c, nil, nil)
	if err != nil || msg != "" || !strings.HasPrefix(ref, "sha256:") {
		t.Fatalf("%q %q %v", ref, msg, err)
	}
	if rec.events[0] != `Normal Pulling Pulling image "busybox"` {
		t.Errorf("event %q", rec.events[0])
	}
	if !strings.HasPrefix(rec.events[1], `Normal Pulled Successfully pulled image "busybox" in `) || !strings.HasSuffix(rec.events[1], "including waiting). Image size: 1234 bytes.") {
		t.Errorf("event %q", rec.events[1])
	}
	want := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "shop", Name: "web", UID: "uid-1", FieldPath: "spec.containers{app}"}
	if !reflect.DeepEqual(rec.refs[0], want) {
		t.Errorf("ref %+v", rec.refs[0])
	}
	// The spec sent: default tag appended textually, pod annotations.
	req := rt.Calls()[0].Request.(*runtimeapi.PullImageRequest)
	if req.Image.Image != "busybox:latest" || req.Image.Annotations["a"] != "b" {
		t.Errorf("spec %v", req.Image)
	}
}

func TestImageNames(t *testing.T) {
	t.Parallel()
	digest := "sha256:" + strings.Repeat("a", 64)
	tests := []struct {
		image, want string
		bad         bool
	}{
		{image: "root", want: "root:latest"},
		{image: "root:tag", want: "root:tag"},
		{image: "root@" + digest, want: "root@" + digest},
		{image: "root:latest@" + digest, want: "root:latest@" + digest},
		{image: "registry.example.com:5000/team/app", want: "registry.example.com:5000/team/app:latest"},
		// distribution/reference reads an upper-case first part as a
		// registry host, as docker does: valid, pulled from host "UPPER".
		{image: "UPPER/case", want: "UPPER/case:latest"},
		{image: "", bad: true},
		{image: "FAILED_IMAGE", bad: true},
		{image: "http://url", bad: true},
		{image: strings.Repeat("a", 64), bad: true},
		{image: strings.Repeat("a", 300), bad: true},
		{image: "busybox:bad tag", bad: true},
	}
	for _, tt := range tests {
		got, err := ApplyDefaultTag(tt.image)
		if tt.bad != (err != nil) || !tt.bad && got != tt.want {
			t.Errorf("ApplyDefaultTag(%.40q) = %q, %v", tt.image, got, err)
		}
		if !tt.bad {
			continue
		}
		rec := &recorder{}
		m := NewManager(fake.New(), WithRecorder(rec))
		pod, c := testPod(tt.image, corev1.PullAlways)
		_, msg, err := m.EnsureImageExists(context.Background(), pod, c, nil, nil)
		m.Close()
		if !errors.Is(err, ErrInvalidImageName) || !strings.HasPrefix(msg, fmt.Sprintf("Failed to apply default image tag %q: ", tt.image)) {
			t.Errorf("%.40q: %v %q", tt.image, err, msg)
		}
		if got := rec.reasons(); !reflect.DeepEqual(got, []string{"InspectFailed"}) {
			t.Errorf("%.40q: events %v", tt.image, got)
		}
	}
}

func TestInspectFailure(t *testing.T) {
	t.Parallel()
	rt := fake.New()
	rt.Fail("ImageStatus", status.Error(codes.Unavailable, "runtime down"))
	rec := &recorder{}
	m := NewManager(rt, WithRecorder(rec))
	defer m.Close()
	pod, c := testPod("busybox", corev1.PullIfNotPresent)
	_, msg, err := m.EnsureImageExists(context.Background(), pod, c, nil, nil)
	if !errors.Is(err, ErrImageInspect) || !errors.Is(err, runtime.ErrUnavailable) || msg != `Failed to inspect image "busybox:latest": rpc error: code = Unavailable desc = runtime down` {
		t.Fatalf("%v %q", err, msg)
	}
	if got := rec.reasons(); !reflect.DeepEqual(got, []string{"InspectFailed"}) {
		t.Fatalf("events %v", got)
	}
}

func secretFor(name, registry, user, pass string) corev1.Secret {
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(
			`{"auths":{%q:{"username":%q,"password":%q}}}`, registry, user, pass))},
	}
}

// stringDataSecretFor is secretFor written as in a YAML file: stringData,
// no data.
func stringDataSecretFor(name, registry, user, pass string) corev1.Secret {
	s := secretFor(name, registry, user, pass)
	s.StringData = map[string]string{corev1.DockerConfigJsonKey: string(s.Data[corev1.DockerConfigJsonKey])}
	s.Data = nil
	return s
}

func nodeKeyring(registry, user, pass string) credentials.Keyring {
	var k credentials.BasicKeyring
	k.Add(credentials.DockerConfig{registry: {Username: user, Password: pass}})
	return &k
}

func TestCredentials(t *testing.T) {
	t.Parallel()
	const reg = "registry.example.com:5000"
	image := reg + "/team/app:1"
	tests := []struct {
		name     string
		secrets  []corev1.Secret
		node     credentials.Keyring
		wantErr  error
		wantAuth []string // usernames tried, in order
	}{
		{"secret right", []corev1.Secret{secretFor("s", reg, "u", "right")}, nil, nil, []string{"u"}},
		{"node right", nil, nodeKeyring(reg, "u", "right"), nil, []string{"u"}},
		{"secret in stringData right: not anonymous", []corev1.Secret{stringDataSecretFor("s", reg, "u", "right")}, nil, nil, []string{"u"}},
		{"secret wrong, node right: both tried in order", []corev1.Secret{secretFor("s", reg, "sec", "wrong")}, nodeKeyring(reg, "u", "right"), nil, []string{"sec", "u"}},
		{"secret right, node wrong: secret first", []corev1.Secret{secretFor("s", reg, "u", "right")}, nodeKeyring(reg, "node", "wrong"), nil, []string{"u"}},
		{"both wrong: ErrImagePull with the 401", []corev1.Secret{secretFor("s", reg, "sec", "wrong1")}, nodeKeyring(reg, "node", "wrong2"), runtime.ErrUnauthorized, []string{"sec", "node"}},
		{"no credentials: anonymous pull refused", nil, nil, runtime.ErrUnauthorized, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rt := fake.New(fake.WithRegistryAuth(reg, "u", "right"))
			m := NewManager(rt, WithNodeKeyring(tt.node))
			defer m.Close()
			pod, c := testPod(image, corev1.PullAlways)
			_, msg, err := m.EnsureImageExists(context.Background(), pod, c, tt.secrets, nil)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrImagePull) {
				t.Fatalf("err %v is not ErrImagePull", err)
			}
			var tried []string
			for _, call := range rt.Calls() {
				if req, ok := call.Request.(*runtimeapi.PullImageRequest); ok {
					tried = append(tried, req.Auth.GetUsername())
				}
			}
			if !reflect.DeepEqual(tried, tt.wantAuth) {
				t.Fatalf("tried %v, want %v", tried, tt.wantAuth)
			}
			for _, secret := range []string{"wrong1", "wrong2", "right"} {
				if strings.Contains(msg, secret) || err != nil && strings.Contains(err.Error(), secret) {
					t.Fatalf("message leaks a password: %q", msg)
				}
			}
		})
	}
}

func TestRuntimeHandlerInSpec(t *testing.T) {
	t.Parallel()
	rt := fake.New()
	m := NewManager(rt, WithRuntimeHandler(func(p *corev1.Pod) string { return "kata" }))
	defer m.Close()
	pod, c := testPod("busybox", corev1.PullAlways)
	m.EnsureImageExists(context.Background(), pod, c, nil, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web"}})
	req := rt.Calls()[0].Request.(*runtimeapi.PullImageRequest)
	if req.Image.RuntimeHandler != "kata" || req.SandboxConfig.GetMetadata().GetName() != "web" {
		t.Fatalf("request %v", req)
	}
}

func TestBackOffLifecycle(t *testing.T) {
	t.Parallel()
	rt := fake.New()
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	m := NewManager(rt, WithClock(clk))
	defer m.Close()
	pod, c := testPod("busybox", corev1.PullAlways)
	ctx := context.Background()
	stop := rt.Fail("PullImage", status.Error(codes.Unknown, "boom"))
	m.EnsureImageExists(ctx, pod, c, nil, nil)
	st, ok := m.BackOff(pod.UID, "busybox")
	if !ok || st.Delay != 10*time.Second || st.LastError != "ErrImagePull: rpc error: code = Unknown desc = boom" {
		t.Fatalf("back-off %+v %v", st, ok)
	}
	// In back-off: no runtime call.
	clk.Step(9 * time.Second)
	if _, _, err := m.EnsureImageExists(ctx, pod, c, nil, nil); !errors.Is(err, ErrImagePullBackOff) || rt.CallCount("PullImage") != 1 {
		t.Fatalf("%v, %d pulls", err, rt.CallCount("PullImage"))
	}
	// After the delay: pull again, fail again, delay doubles.
	clk.Step(time.Second)
	if _, _, err := m.EnsureImageExists(ctx, pod, c, nil, nil); !errors.Is(err, ErrImagePull) {
		t.Fatal(err)
	}
	if st, _ := m.BackOff(pod.UID, "busybox"); st.Delay != 20*time.Second {
		t.Fatalf("delay %v", st.Delay)
	}
	// Keyed by the raw requested string: "busybox:latest" is another key.
	c2 := *c
	c2.Image = "busybox:latest"
	if _, _, err := m.EnsureImageExists(ctx, pod, &c2, nil, nil); !errors.Is(err, ErrImagePull) {
		t.Fatalf("other key: %v", err)
	}
	// Reset (a fixed secret): pulls at once and succeeds.
	stop()
	m.ResetBackOff(pod.UID, "busybox")
	if _, _, err := m.EnsureImageExists(ctx, pod, c, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.BackOff(pod.UID, "busybox"); ok {
		t.Fatal("reset kept the entry")
	}
	// GC: stale entries (2×max since last update) go on the next success.
	clk.Step(601 * time.Second)
	m.EnsureImageExists(ctx, pod, c, nil, nil)
	if _, ok := m.BackOff(pod.UID, "busybox:latest"); ok {
		t.Fatal("stale entry not garbage-collected")
	}
}

func TestPullFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		script  func(rt *fake.Runtime)
		ctx     func() (context.Context, context.CancelFunc)
		wantErr []error
		wantMsg string
	}{
		{"Unavailable", func(rt *fake.Runtime) { rt.Fail("PullImage", status.Error(codes.Unavailable, "connection refused")) }, nil,
			[]error{ErrImagePull, runtime.ErrUnavailable}, "rpc error: code = Unavailable desc = connection refused"},
		{"registry unavailable", func(rt *fake.Runtime) {
			rt.Fail("PullImage", status.Error(codes.Unknown, "RegistryUnavailable: dial tcp: i/o timeout"))
		}, nil, []error{ErrRegistryUnavailable}, "image pull failed for busybox because the registry is unavailable: dial tcp: i/o timeout"},
		{"signature", func(rt *fake.Runtime) {
			rt.Fail("PullImage", status.Error(codes.Unknown, "SignatureValidationFailed: untrusted"))
		}, nil, []error{ErrSignatureValidationFailed}, "image pull failed for busybox because the signature validation failed: untrusted"},
		{"hang past the deadline", func(rt *fake.Runtime) { rt.Hang("PullImage") }, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, []error{ErrImagePull, runtime.ErrDeadlineExceeded}, "context deadline exceeded"},
		{"empty ref without error", nil, nil, []error{ErrImagePull}, `imageRef of image "busybox:latest" is not set`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rt := fake.New()
			var img runtime.ImageService = rt
			if tt.script != nil {
				tt.script(rt)
			} else {
				img = emptyRef{rt}
			}
			rec := &recorder{}
			m := NewManager(img, WithRecorder(rec))
			defer m.Close()
			ctx, cancel := context.WithCancel(context.Background())
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			pod, c := testPod("busybox", corev1.PullAlways)
			_, msg, err := m.EnsureImageExists(ctx, pod, c, nil, nil)
			for _, want := range tt.wantErr {
				if !errors.Is(err, want) {
					t.Fatalf("err %v is not %v", err, want)
				}
			}
			if msg != tt.wantMsg {
				t.Fatalf("message %q\nwant    %q", msg, tt.wantMsg)
			}
			if got := rec.reasons(); !reflect.DeepEqual(got, []string{"Pulling", "Failed"}) {
				t.Fatalf("events %v", got)
			}
			if _, ok := m.BackOff(pod.UID, "busybox"); !ok {
				t.Fatal("no back-off recorded")
			}
		})
	}
}

type emptyRef struct{ *fake.Runtime }

func (e emptyRef) PullImage(context.Context, *runtimeapi.ImageSpec, *runtimeapi.AuthConfig, *runtimeapi.PodSandboxConfig) (string, error) {
	return "", nil
}

// TestDifferentCredentialMessagesAreErrImagePull: kubelet's aggregate of
// different messages starts with "[" and is not recognised as registry
// unavailable.
func TestDifferentCredentialMessagesAreErrImagePull(t *testing.T) {
	t.Parallel()
	rt := fake.New()
	n := 0
	rt.Intercept(func(_ context.Context, method string, _ proto.Message) error {
		if method != "PullImage" {
			return nil
		}
		n++
		return status.Errorf(codes.Unknown, "RegistryUnavailable: attempt %d", n)
	})
	m := NewManager(rt, WithNodeKeyring(nodeKeyring("docker.io", "a", "b")))
	defer m.Close()
	pod, c := testPod("busybox", corev1.PullAlways)
	s := secretFor("s", "docker.io", "x", "y")
	_, msg, err := m.EnsureImageExists(context.Background(), pod, c, []corev1.Secret{s}, nil)
	if !errors.Is(err, ErrImagePull) || msg != "[rpc error: code = Unknown desc = RegistryUnavailable: attempt 1, rpc error: code = Unknown desc = RegistryUnavailable: attempt 2]" {
		t.Fatalf("%v %q", err, msg)
	}
}

func waitFor(cond func() bool) {
	for !cond() {
		goruntime.Gosched()
	}
}

// perPod answers only for the pod whose service account it names, as a
// plugin in service-account token mode does; it records who asked.
type perPod struct {
	mu    sync.Mutex
	asked []credentials.PodRef
	sa    string
	node  credentials.Keyring
}

func (p *perPod) Lookup(string) ([]credentials.AuthConfig, bool) { return nil, false }

func (p *perPod) ForPod(_ context.Context, pod credentials.PodRef) credentials.Keyring {
	p.mu.Lock()
	p.asked = append(p.asked, pod)
	p.mu.Unlock()
	if pod.ServiceAccountName == p.sa {
		return p.node
	}
	return credentials.Union{}
}

// A node keyring whose answers depend on the pod (credentials.PodKeyring,
// KEP-4412's plugins) is asked for the pulling pod, through a Union too.
func TestNodeKeyringForPod(t *testing.T) {
	const reg = "registry.example.com:5000"
	p := &perPod{sa: "puller", node: nodeKeyring(reg, "u", "right")}
	rt := fake.New(fake.WithRegistryAuth(reg, "u", "right"))
	m := NewManager(rt, WithNodeKeyring(credentials.Union{p}))
	defer m.Close()
	for _, sa := range []string{"other", "puller"} {
		pod, c := testPod(reg+"/team/app:1", corev1.PullAlways)
		pod.Spec.ServiceAccountName = sa
		pod.UID = types.UID("uid-" + sa)
		_, _, err := m.EnsureImageExists(context.Background(), pod, c, nil, nil)
		if sa == "other" && !errors.Is(err, runtime.ErrUnauthorized) || sa == "puller" && err != nil {
			t.Fatalf("service account %s: %v", sa, err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.asked) != 2 || p.asked[1].ServiceAccountName != "puller" || p.asked[1].UID == "" || p.asked[1].Namespace == "" || p.asked[1].Name == "" {
		t.Fatalf("asked %+v", p.asked)
	}
}
