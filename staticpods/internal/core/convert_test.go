package core

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestShapesMatchV1 walks Pod and corev1.Pod side by side: every core type
// has the v1 type's fields, by name and in order, with the same kinds, so
// that FromV1 can copy every field (kubelet's conversion is a memory copy
// for all of them). test/diff's TestGeneratedCoreTypes checks the other
// side: these types are kubelet's.
func TestShapesMatchV1(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(c, v reflect.Type, path string)
	walk = func(c, v reflect.Type, path string) {
		if c == v || seen[c] {
			return
		}
		seen[c] = true
		if c.Kind() != v.Kind() {
			t.Errorf("%s: %s is a %s, v1's %s a %s", path, c, c.Kind(), v, v.Kind())
			return
		}
		if c.Name() != "" && c.Name() != v.Name() {
			t.Errorf("%s: core.%s, v1.%s", path, c.Name(), v.Name())
		}
		switch c.Kind() {
		case reflect.Struct:
			if c.NumField() != v.NumField() {
				t.Errorf("%s: %d fields, v1 %d", path, c.NumField(), v.NumField())
				return
			}
			for i := range c.NumField() {
				cf, vf := c.Field(i), v.Field(i)
				if cf.Name != vf.Name || cf.Anonymous != vf.Anonymous {
					t.Errorf("%s: field %d is %s, v1's %s", path, i, cf.Name, vf.Name)
					continue
				}
				walk(cf.Type, vf.Type, path+"."+cf.Name)
			}
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(c.Elem(), v.Elem(), path+"[]")
		case reflect.Map:
			walk(c.Key(), v.Key(), path+"{key}")
			walk(c.Elem(), v.Elem(), path+"{}")
		}
	}
	walk(reflect.TypeOf(Pod{}), reflect.TypeOf(corev1.Pod{}), "Pod")
	if len(seen) < 300 {
		t.Errorf("walked %d types; core.Pod reaches about 340", len(seen))
	}
}

func TestFromV1(t *testing.T) {
	q := resource.MustParse("1000m")
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:           "c",
				Args:           []string{},
				Resources:      corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q}},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}},
				ReadinessProbe: nil,
			}},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &q}}}},
		},
	}
	got, err := FromV1(pod)
	if err != nil {
		t.Fatal(err)
	}
	if got.TypeMeta != (metav1.TypeMeta{}) {
		t.Errorf("TypeMeta %+v: kubelet's internal pod has none", got.TypeMeta)
	}
	if pod.Kind != "Pod" {
		t.Error("FromV1 changed its argument")
	}
	c := got.Spec.Containers[0]
	if c.Args == nil || c.Command != nil || c.ReadinessProbe != nil {
		t.Errorf("nil and empty not kept apart: args %#v command %#v", c.Args, c.Command)
	}
	if l := c.Resources.Limits[ResourceName("cpu")]; l.String() != "1" || c.LivenessProbe.HTTPGet.Port.StrVal != "http" {
		t.Errorf("values not copied: %+v", c)
	}
	if got.Name != "p" || got.Labels["a"] != "b" || got.Spec.Volumes[0].EmptyDir.SizeLimit.Cmp(q) != 0 {
		t.Errorf("values not copied: %+v", got)
	}
	if !strings.HasPrefix(reflect.TypeOf(got).String(), "*core.") {
		t.Errorf("type %s: the hash needs the package name core", reflect.TypeOf(got))
	}
}

// A shape mismatch is an error, never a dropped field.
func TestConvertRefusesMismatch(t *testing.T) {
	type a struct{ X, Y string }
	type b struct{ X, Z string }
	var out b
	if err := convert(reflect.ValueOf(&out).Elem(), reflect.ValueOf(a{"1", "2"})); err == nil {
		t.Error("converted structs with different field names")
	}
}
