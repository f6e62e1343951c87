package validation

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrInvalidPod: the pod is one the API server would refuse. Every podstart
// entry point that writes to disk or starts anything returns an error
// matching it (errors.Is) before acting.
var ErrInvalidPod = errors.New("invalid pod")

// Error is an invalid pod and every reason the API server would give.
type Error struct {
	Namespace, Name string
	Errs            field.ErrorList
}

// Error names the pod and each bad field with the API server's message.
func (e *Error) Error() string {
	return fmt.Sprintf("%v: pod %s/%s: %v", ErrInvalidPod, e.Namespace, e.Name, e.Errs.ToAggregate())
}

// Is makes an Error match ErrInvalidPod.
func (e *Error) Is(target error) bool { return target == ErrInvalidPod }

// Check is Pod as an error: nil for a valid pod, otherwise an *Error that
// matches ErrInvalidPod. A nil pod is invalid.
func Check(pod *corev1.Pod) error {
	if pod == nil {
		return &Error{Errs: field.ErrorList{field.Required(field.NewPath("pod"), "")}}
	}
	errs := Pod(pod)
	if len(errs) == 0 {
		return nil
	}
	return &Error{Namespace: pod.Namespace, Name: pod.Name, Errs: errs}
}

// Pod returns the field errors the API server's ValidatePodCreate would
// return for pod on the fields this package covers, with its paths and
// messages; none for a valid pod. Empty fields that the API server's
// defaulting fills are accepted (see the package doc).
func Pod(pod *corev1.Pod) field.ErrorList {
	if pod == nil {
		return field.ErrorList{field.Required(field.NewPath("pod"), "")}
	}
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	errs = append(errs, objectMeta(&pod.ObjectMeta, meta)...)
	errs = append(errs, podSpec(&pod.Spec, &pod.ObjectMeta, field.NewPath("spec"))...)
	return errs
}

// objectMeta is the API server's ValidateObjectMeta for a pod, and
// podstart's own rule for the UID (see the package doc).
func objectMeta(m *metav1.ObjectMeta, fld *field.Path) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(m, m.Namespace != "", apivalidation.NameIsDNSSubdomain, fld)
	switch uid := string(m.UID); {
	case uid == "":
		errs = append(errs, field.Required(fld.Child("uid"), "podstart needs a UID: it names the pod's directories"))
	case uid == "." || uid == ".." || strings.ContainsAny(uid, "/\x00"):
		errs = append(errs, field.Invalid(fld.Child("uid"), uid, "must not contain '/' or NUL, nor be '.' or '..'"))
	}
	return errs
}
