package images

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/credentials"
	"github.com/podstart/podstart/runtime/fake"
)

// TestNilOptionsFallBack: nil options keep the defaults instead of
// panicking on first use.
func TestNilOptionsFallBack(t *testing.T) {
	m := NewManager(fake.New(fake.WithRegistryImages("docker.io/library/nginx:1")),
		WithClock(nil), WithRecorder(nil), WithRuntimeHandler(nil), WithNodeKeyring(nil))
	defer m.Close()
	pod, c := testPod("nginx:1", corev1.PullIfNotPresent)
	if _, _, err := m.EnsureImageExists(context.Background(), pod, c, nil, nil); err != nil {
		t.Fatal(err)
	}
}

const (
	leakUser = "leakuser"
	leakPass = "Hunter2-Pa55word-xyzzy"
)

func leakForms() []string {
	up := leakUser + ":" + leakPass
	return []string{
		leakPass,
		base64.StdEncoding.EncodeToString([]byte(up)), base64.RawStdEncoding.EncodeToString([]byte(up)),
		base64.StdEncoding.EncodeToString([]byte(leakPass)), base64.RawStdEncoding.EncodeToString([]byte(leakPass)),
		hex.EncodeToString([]byte(leakPass)), strings.ToUpper(hex.EncodeToString([]byte(leakPass))),
		hex.EncodeToString([]byte(up)),
	}
}

func pullSecret(name, data string) corev1.Secret {
	return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(data)}}
}

// TestMalformedSecretIsError: a pull secret that does not parse gives the
// documented *Error (ErrImagePull, matching credentials.ErrMalformedSecret)
// and a Failed event naming the secret, never its content.
func TestMalformedSecretIsError(t *testing.T) {
	rec := &recorder{}
	m := NewManager(fake.New(fake.WithRegistryImages("reg.io/app:1")), WithRecorder(rec))
	defer m.Close()
	pod, c := testPod("reg.io/app:1", corev1.PullAlways)
	_, msg, err := m.EnsureImageExists(context.Background(), pod, c, []corev1.Secret{pullSecret("bad", `{"auths":{"reg.io":{"auth":"`+leakPass+`"}}}`)}, nil)
	var ie *Error
	if !errors.As(err, &ie) || !errors.Is(err, ErrImagePull) || !errors.Is(err, credentials.ErrMalformedSecret) {
		t.Fatalf("err = %#v, want *Error matching ErrImagePull and ErrMalformedSecret", err)
	}
	if !strings.Contains(msg, "shop/bad") || strings.Contains(msg, leakPass) {
		t.Fatalf("message %q", msg)
	}
	if got := rec.reasons(); len(got) != 1 || got[0] != EventFailed {
		t.Fatalf("events %v, want [%s]", got, EventFailed)
	}
}

// TestLeakScanPulls: failing pulls with a known password, malformed
// secrets, the logs at the highest verbosity, the events, the errors and
// every fmt verb of the manager's exported values hold the password in no
// encoding.
func TestLeakScanPulls(t *testing.T) {
	var mu sync.Mutex
	var texts []string
	add := func(what, s string) {
		mu.Lock()
		defer mu.Unlock()
		texts = append(texts, what+": "+s)
	}
	logger := funcr.New(func(prefix, args string) { add("log", prefix+" "+args) }, funcr.Options{Verbosity: 10})
	ctx := logr.NewContext(context.Background(), logger)
	rec := &recorder{}
	f := fake.New(fake.WithRegistryImages("reg.io/app:1"), fake.WithRegistryAuth("reg.io", leakUser, "the-right-one"))
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	node := credentials.Union{}
	m := NewManager(f, WithRecorder(rec), WithClock(clk), WithNodeKeyring(node), WithCredentialOptions(credentials.WithTokens()))
	defer m.Close()
	auth := base64.StdEncoding.EncodeToString([]byte(leakUser + ":" + leakPass))
	good := pullSecret("good", `{"auths":{"reg.io":{"auth":"`+auth+`"},"reg.io/app":{"username":"`+leakUser+`","password":"`+leakPass+`","identitytoken":"`+leakPass+`"}}}`)
	pod, c := testPod("reg.io/app:1", corev1.PullAlways)
	for i, secrets := range [][]corev1.Secret{
		{good},
		{good}, // in back-off
		{pullSecret("bad1", `{"auths":{"reg.io":{"auth":"`+leakPass+`"}}}`)},
		{pullSecret("bad2", `{"auths":{"reg.io":{"password":`+leakPass+`}}}`)},
		{pullSecret("bad3", `{"auths":{"reg.io":{"password":"`+leakPass)},
	} {
		ref, msg, err := m.EnsureImageExists(ctx, pod, c, secrets, nil)
		if err == nil {
			t.Fatalf("pull %d succeeded: %s", i, ref)
		}
		add("message", msg)
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
			add("error "+verb, fmt.Sprintf(verb, err))
		}
		st, _ := m.BackOff(pod.UID, c.Image)
		add("BackOffState", fmt.Sprintf("%+v", st))
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		add("Manager "+verb, fmt.Sprintf(verb, m))
	}
	rec.mu.Lock()
	for _, e := range rec.events {
		add("event", e)
	}
	rec.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	logs := 0
	for _, s := range texts {
		if strings.HasPrefix(s, "log:") {
			logs++
		}
		for _, form := range leakForms() {
			if strings.Contains(s, form) {
				t.Errorf("leak of %q in %s", form, s)
			}
		}
	}
	if logs == 0 || len(rec.events) < 5 {
		t.Fatalf("scan saw %d log lines and %d events: too few to prove anything", logs, len(rec.events))
	}
}

// TestPullAttemptsBounded: a pull secret with 100 matching keys makes at
// most DefaultMaxPullAttempts runtime pulls per pull (kubelet: 100), and
// WithMaxPullAttempts changes the bound.
func TestPullAttemptsBounded(t *testing.T) {
	keys := map[string]bool{}
	var entries []string
	for i := 0; len(entries) < 100; i++ {
		var key string
		switch i % 3 {
		case 0:
			key = fmt.Sprintf("r%seg.io", strings.Repeat("*", i/3+1))
		case 1:
			key = fmt.Sprintf("re%sg.io", strings.Repeat("*", i/3+1))
		case 2:
			key = fmt.Sprintf("reg%s.io", strings.Repeat("*", i/3+1))
		}
		if !keys[key] {
			keys[key] = true
			entries = append(entries, fmt.Sprintf(`%q:{"username":"u%d","password":"wrong"}`, key, i))
		}
	}
	secret := pullSecret("many", `{"auths":{`+strings.Join(entries, ",")+`}}`)
	tests := []struct {
		name string
		opts []Option
		want int
	}{
		{name: "default", want: DefaultMaxPullAttempts},
		{name: "option", opts: []Option{WithMaxPullAttempts(3)}, want: 3},
		{name: "unlimited", opts: []Option{WithMaxPullAttempts(-1)}, want: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := fake.New(fake.WithRegistryImages("reg.io/app:1"), fake.WithRegistryAuth("reg.io", "u", "right"))
			m := NewManager(rt, tt.opts...)
			defer m.Close()
			pod, c := testPod("reg.io/app:1", corev1.PullAlways)
			_, _, err := m.EnsureImageExists(context.Background(), pod, c, []corev1.Secret{secret}, nil)
			if !errors.Is(err, ErrImagePull) {
				t.Fatalf("err = %v", err)
			}
			if n := rt.CallCount("PullImage"); n != tt.want {
				t.Fatalf("%d runtime pulls, want %d", n, tt.want)
			}
		})
	}
}
