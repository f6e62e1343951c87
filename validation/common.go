package validation

import (
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The API server's messages.
const (
	isNegativeErrorMsg    = `must be greater than or equal to 0`
	isNotPositiveErrorMsg = `must be greater than zero`
	isNotIntegerErrorMsg  = `must be an integer`
	fileModeErrorMsg      = `must be a number between 0 and 0777 (octal), both inclusive`
)

// IsDNSLabel is apimachinery's IsDNS1123Label without its regular
// expression and messages (a tenth of its cost, and no allocation: names
// are checked on every sync): 1 to 63 of [a-z0-9-], starting and ending
// alphanumeric.
func IsDNSLabel(s string) bool {
	return len(s) <= validation.DNS1123LabelMaxLength && labelChars(s)
}

// labelChars: [a-z0-9]([-a-z0-9]*[a-z0-9])?, of any length.
func labelChars(s string) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// IsDNSSubdomain is apimachinery's IsDNS1123Subdomain without its regular
// expression and messages: at most 253 characters of labels (of any
// length) joined by dots.
func IsDNSSubdomain(s string) bool {
	if len(s) == 0 || len(s) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	for len(s) > 0 {
		i := strings.IndexByte(s, '.')
		if i < 0 {
			i = len(s)
		}
		if !labelChars(s[:i]) {
			return false
		}
		if i == len(s) {
			break
		}
		s = s[i+1:]
		if s == "" {
			return false // a trailing dot
		}
	}
	return true
}

// labelMsgs is IsDNS1123Label's messages, with IsDNSLabel's fast answer
// for a valid label.
func labelMsgs(s string) []string {
	if IsDNSLabel(s) {
		return nil
	}
	return validation.IsDNS1123Label(s)
}

// subdomainMsgs is IsDNS1123Subdomain's messages, with IsDNSSubdomain's
// fast answer for a valid name.
func subdomainMsgs(s string) []string {
	if IsDNSSubdomain(s) {
		return nil
	}
	return validation.IsDNS1123Subdomain(s)
}

// dnsLabel is ValidateDNS1123Label.
func dnsLabel(value string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range labelMsgs(value) {
		errs = append(errs, field.Invalid(fld, value, msg))
	}
	return errs
}

// dnsSubdomain is ValidateDNS1123Subdomain.
func dnsSubdomain(value string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range subdomainMsgs(value) {
		errs = append(errs, field.Invalid(fld, value, msg))
	}
	return errs
}

// qualifiedName is ValidateQualifiedName.
func qualifiedName(value string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		errs = append(errs, field.Invalid(fld, value, msg))
	}
	return errs
}

// nonnegative is ValidateNonnegativeField.
func nonnegative(value int64, fld *field.Path) field.ErrorList {
	if value < 0 {
		return field.ErrorList{field.Invalid(fld, value, isNegativeErrorMsg)}
	}
	return nil
}

// nonnegativeQuantity is ValidateNonnegativeQuantity.
func nonnegativeQuantity(value resource.Quantity, fld *field.Path) field.ErrorList {
	if value.Sign() < 0 {
		return field.ErrorList{field.Invalid(fld, value.String(), isNegativeErrorMsg)}
	}
	return nil
}

// positiveQuantity is ValidatePositiveQuantityValue.
func positiveQuantity(value resource.Quantity, fld *field.Path) field.ErrorList {
	if value.Sign() <= 0 {
		return field.ErrorList{field.Invalid(fld, value.String(), isNotPositiveErrorMsg)}
	}
	return nil
}

// fileMode is the API server's check of a volume file's mode or
// defaultMode: 0 to 0777. A mode outside it would become a setuid, setgid
// or sticky file (or a negative one), so the node never writes one.
func fileMode(mode *int32, fld *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0o777 || *mode < 0) {
		return field.ErrorList{field.Invalid(fld, *mode, fileModeErrorMsg)}
	}
	return nil
}

// localDescendingPath is validateLocalDescendingPath: relative, no "..".
func localDescendingPath(target string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(fld, target, "must be a relative path"))
	}
	return append(errs, noBacksteps(target, fld)...)
}

// noBacksteps is validatePathNoBacksteps: no ".." element.
func noBacksteps(target string, fld *field.Path) field.ErrorList {
	for _, item := range strings.Split(filepath.ToSlash(target), "/") {
		if item == ".." {
			return field.ErrorList{field.Invalid(fld, target, "must not contain '..'")}
		}
	}
	return nil
}

// localNonReservedPath is ValidateLocalNonReservedPath: relative, no "..",
// not starting with "..".
func localNonReservedPath(target string, fld *field.Path) field.ErrorList {
	errs := localDescendingPath(target, fld)
	// Not reported when the ".." element check already caught it.
	if strings.HasPrefix(target, "..") && !strings.HasPrefix(target, "../") {
		errs = append(errs, field.Invalid(fld, target, "must not start with '..'"))
	}
	return errs
}

// fieldAllowList is the API server's validateFieldAllowList: each field of
// the struct value that is not allowed must be its zero value, or it is
// Forbidden with errorText at fld.<field>, named with a lower-case first
// letter.
func fieldAllowList(value interface{}, allowed map[string]bool, errorText string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	t, v := reflect.TypeOf(value), reflect.ValueOf(value)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if allowed[f.Name] || v.Field(i).IsZero() {
			continue
		}
		r, n := utf8.DecodeRuneInString(f.Name)
		errs = append(errs, field.Forbidden(fld.Child(string(unicode.ToLower(r))+f.Name[n:]), errorText))
	}
	return errs
}
