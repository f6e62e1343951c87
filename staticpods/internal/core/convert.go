package core

import (
	"fmt"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// FromV1 returns pod as kubelet's decoder hands it to applyDefaults: the
// internal Pod that k8s.io/kubernetes/pkg/apis/core/v1's conversion makes
// of a v1 Pod. In v1.37.2 that conversion is a copy for every type
// reachable from Pod (zz_generated.conversion.go casts PodSpec and
// PodStatus as memory; ObjectMeta is copied; no hand-written function takes
// part), so FromV1 copies field by field, by name, keeping nil apart from
// empty and sharing the values of types both use (metav1's, Quantity,
// IntOrString). A field of either side without its twin is an error,
// never dropped. TypeMeta is left empty: the decoder clears it when it
// converts to the internal version.
func FromV1(pod *corev1.Pod) (*Pod, error) {
	out := &Pod{}
	in := *pod
	in.TypeMeta = out.TypeMeta
	if err := convert(reflect.ValueOf(out).Elem(), reflect.ValueOf(&in).Elem()); err != nil {
		return nil, err
	}
	return out, nil
}

// plans caches, per pair of struct types, the source field index of each
// destination field.
var plans sync.Map // [2]reflect.Type → []int

func plan(dst, src reflect.Type) ([]int, error) {
	key := [2]reflect.Type{dst, src}
	if p, ok := plans.Load(key); ok {
		return p.([]int), nil
	}
	if dst.NumField() != src.NumField() {
		return nil, fmt.Errorf("core: %s has %d fields, %s %d", dst, dst.NumField(), src, src.NumField())
	}
	p := make([]int, dst.NumField())
	for i := range p {
		f := dst.Field(i)
		g, ok := src.FieldByName(f.Name)
		if !ok || len(g.Index) != 1 {
			return nil, fmt.Errorf("core: %s.%s has no field of that name in %s", dst, f.Name, src)
		}
		p[i] = g.Index[0]
	}
	plans.Store(key, p)
	return p, nil
}

// convert copies src into dst, which have the same shape but for the
// names of the types.
func convert(dst, src reflect.Value) error {
	if dst.Type() == src.Type() {
		dst.Set(src)
		return nil
	}
	if dst.Kind() != src.Kind() {
		return fmt.Errorf("core: cannot convert %s to %s", src.Type(), dst.Type())
	}
	switch dst.Kind() {
	case reflect.Struct:
		p, err := plan(dst.Type(), src.Type())
		if err != nil {
			return err
		}
		for i, j := range p {
			if err := convert(dst.Field(i), src.Field(j)); err != nil {
				return err
			}
		}
	case reflect.Pointer:
		if src.IsNil() {
			return nil
		}
		dst.Set(reflect.New(dst.Type().Elem()))
		return convert(dst.Elem(), src.Elem())
	case reflect.Slice:
		if src.IsNil() {
			return nil
		}
		dst.Set(reflect.MakeSlice(dst.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			if err := convert(dst.Index(i), src.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Array:
		for i := range src.Len() {
			if err := convert(dst.Index(i), src.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if src.IsNil() {
			return nil
		}
		dst.Set(reflect.MakeMapWithSize(dst.Type(), src.Len()))
		k := reflect.New(dst.Type().Key()).Elem()
		v := reflect.New(dst.Type().Elem()).Elem()
		for it := src.MapRange(); it.Next(); {
			k.SetZero()
			v.SetZero()
			if err := convert(k, it.Key()); err != nil {
				return err
			}
			if err := convert(v, it.Value()); err != nil {
				return err
			}
			dst.SetMapIndex(k, v)
		}
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		dst.Set(src.Convert(dst.Type()))
	default:
		return fmt.Errorf("core: cannot convert %s (%s)", src.Type(), src.Kind())
	}
	return nil
}
