package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/podsync"
)

// volumes is the agent's podsync.VolumeProvider: Secret, ConfigMap,
// downward API and projected volumes (what every pod's kube-api-access
// volume is) are written from the API under the pod's directory (kubelet's
// volumes/kubernetes.io~secret/<name>), the rest is podsync's
// DefaultVolumes. Each sync writes them again, so a changed Secret reaches
// the pod as it does with kubelet.
type volumes struct {
	client  kubernetes.Interface
	rootDir string

	mu     sync.Mutex
	tokens map[string]cachedToken // by pod, service account, audience and expiry
}

func (v *volumes) Volumes(ctx context.Context, pod *corev1.Pod) (mounts.VolumeMap, error) {
	out := mounts.VolumeMap{}
	for _, vol := range pod.Spec.Volumes {
		if vol.Secret == nil && vol.ConfigMap == nil && vol.DownwardAPI == nil && vol.Projected == nil {
			m, err := podsync.DefaultVolumes{RootDir: v.rootDir}.Volume(ctx, pod, vol) // hostPath, emptyDir
			if err != nil {
				return nil, err
			}
			out[vol.Name] = m
			continue
		}
		plugin, files, err := v.payload(ctx, pod, vol)
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", vol.Name, err)
		}
		dir := filepath.Join(podsync.PodDir(v.rootDir, pod), "volumes", plugin, vol.Name)
		if err := mounts.WriteAtomic(dir, files); err != nil {
			return nil, fmt.Errorf("volume %q: %w", vol.Name, err)
		}
		out[vol.Name] = mounts.Volume{HostPath: dir, ReadOnly: true, SELinuxRelabel: true}
	}
	return out, nil
}

// payload is a volume's files and kubelet's plugin directory for it.
// podstart gap: kubelet's secret, configmap, downward-api and projected
// plugins' payloads (this function, project, downward, token).
func (v *volumes) payload(ctx context.Context, pod *corev1.Pod, vol corev1.Volume) (string, map[string]mounts.File, error) {
	files := map[string]mounts.File{}
	var err error
	switch {
	case vol.Secret != nil:
		s := vol.Secret
		err = v.project(ctx, pod.Namespace, files, &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: s.SecretName}, Items: s.Items, Optional: s.Optional}, nil, modeOf(s.DefaultMode))
		return "kubernetes.io~secret", files, err
	case vol.ConfigMap != nil:
		c := vol.ConfigMap
		err = v.project(ctx, pod.Namespace, files, nil, &corev1.ConfigMapProjection{LocalObjectReference: c.LocalObjectReference, Items: c.Items, Optional: c.Optional}, modeOf(c.DefaultMode))
		return "kubernetes.io~configmap", files, err
	case vol.DownwardAPI != nil:
		err = downward(pod, files, vol.DownwardAPI.Items, modeOf(vol.DownwardAPI.DefaultMode))
		return "kubernetes.io~downward-api", files, err
	}
	mode := modeOf(vol.Projected.DefaultMode)
	for _, src := range vol.Projected.Sources {
		switch {
		case src.Secret != nil || src.ConfigMap != nil:
			err = v.project(ctx, pod.Namespace, files, src.Secret, src.ConfigMap, mode)
		case src.DownwardAPI != nil:
			err = downward(pod, files, src.DownwardAPI.Items, mode)
		case src.ServiceAccountToken != nil:
			var tok []byte
			if tok, err = v.token(ctx, pod, src.ServiceAccountToken); err == nil {
				files[src.ServiceAccountToken.Path] = mounts.File{Data: tok, Mode: mode}
			}
		default:
			err = errors.New("projected source not supported by the agent (clusterTrustBundle, podCertificate)")
		}
		if err != nil {
			return "", nil, err
		}
	}
	return "kubernetes.io~projected", files, nil
}

func modeOf(m *int32) os.FileMode {
	if m == nil {
		return 0o644 // the API server's default for all four volume types
	}
	return os.FileMode(*m)
}

// project adds a Secret's or ConfigMap's keys as files, as kubelet's secret
// and configmap plugins do: all keys, or the items given; optional ones
// may be missing.
func (v *volumes) project(ctx context.Context, ns string, files map[string]mounts.File, sp *corev1.SecretProjection, cp *corev1.ConfigMapProjection, mode os.FileMode) error {
	var (
		name     string
		items    []corev1.KeyToPath
		optional *bool
		data     = map[string][]byte{}
		err      error
	)
	if sp != nil {
		name, items, optional = sp.Name, sp.Items, sp.Optional
		var obj *corev1.Secret
		if obj, err = v.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			data = obj.Data
		}
	} else {
		name, items, optional = cp.Name, cp.Items, cp.Optional
		var obj *corev1.ConfigMap
		if obj, err = v.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			for k, s := range obj.Data {
				data[k] = []byte(s)
			}
			for k, b := range obj.BinaryData {
				data[k] = b
			}
		}
	}
	isOptional := optional != nil && *optional
	if apierrors.IsNotFound(err) && isOptional {
		return nil
	}
	if err != nil {
		return err
	}
	if len(items) == 0 {
		for k, b := range data {
			files[k] = mounts.File{Data: b, Mode: mode}
		}
		return nil
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			if isOptional {
				continue
			}
			return fmt.Errorf("configmap or secret %s/%s has no key %q", ns, name, it.Key)
		}
		files[it.Path] = mounts.File{Data: b, Mode: modeOr(it.Mode, mode)}
	}
	return nil
}

func modeOr(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m)
}

// downward adds downward API files: labels and annotations as kubelet's
// fieldpath.FormatMap writes them, other fields through criconfig.
func downward(pod *corev1.Pod, files map[string]mounts.File, items []corev1.DownwardAPIVolumeFile, mode os.FileMode) error {
	for _, it := range items {
		var val string
		switch {
		case it.FieldRef != nil && it.FieldRef.FieldPath == "metadata.labels":
			val = formatMap(pod.Labels)
		case it.FieldRef != nil && it.FieldRef.FieldPath == "metadata.annotations":
			val = formatMap(pod.Annotations)
		default:
			var c *corev1.Container
			if it.ResourceFieldRef != nil {
				for i := range pod.Spec.Containers {
					if pod.Spec.Containers[i].Name == it.ResourceFieldRef.ContainerName {
						c = &pod.Spec.Containers[i]
					}
				}
			}
			var err error
			val, _, err = criconfig.FieldRefValue(pod, c, &corev1.EnvVarSource{FieldRef: it.FieldRef, ResourceFieldRef: it.ResourceFieldRef}, nil, criconfig.Node{})
			if err != nil {
				return fmt.Errorf("downward API file %q: %w", it.Path, err)
			}
		}
		files[it.Path] = mounts.File{Data: []byte(val), Mode: modeOr(it.Mode, mode)}
	}
	return nil
}

// formatMap is kubelet's fieldpath.FormatMap: sorted key="value" lines.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%v=%q", k, m[k])
	}
	return b.String()
}

// token is a bound service account token for the pod, from the TokenRequest
// API, kept until 80% of its life has passed, as kubelet's token manager does.
// podstart gap: no token manager (credentials has tokens only for
// credential provider plugins).
func (v *volumes) token(ctx context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) ([]byte, error) {
	key := fmt.Sprintf("%s/%s/%v/%v", pod.UID, pod.Spec.ServiceAccountName, p.Audience, p.ExpirationSeconds)
	v.mu.Lock()
	defer v.mu.Unlock()
	if t, ok := v.tokens[key]; ok && time.Now().Before(t.refresh) {
		return t.token, nil
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: p.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	if p.Audience != "" {
		req.Spec.Audiences = []string{p.Audience}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr, err := v.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("service account token: %w", err)
	}
	now := time.Now()
	life := tr.Status.ExpirationTimestamp.Sub(now)
	if v.tokens == nil {
		v.tokens = map[string]cachedToken{}
	}
	v.tokens[key] = cachedToken{[]byte(tr.Status.Token), now.Add(life * 8 / 10)}
	return []byte(tr.Status.Token), nil
}

type cachedToken struct {
	token   []byte
	refresh time.Time
}
