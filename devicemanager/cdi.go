package devicemanager

import (
	"fmt"
	"strings"
)

// ValidateCDIName checks that name is a fully qualified CDI device name,
// vendor/class=name, by the rules of the CDI parser
// (tags.cncf.io/container-device-interface/pkg/parser): vendor and class
// start with a letter, end with a letter or digit, and hold letters,
// digits, '_', '-' and '.' (the class no '/'); the device name starts and
// ends with a letter or digit and holds letters, digits, '_', '-', '.'
// and ':'. Errors match ErrBadResponse.
func ValidateCDIName(name string) error {
	bad := func(why string) error { return fmt.Errorf("%w: CDI device %q: %s", ErrBadResponse, name, why) }
	if name == "" || name[0] == '/' {
		return bad("not a qualified name")
	}
	qual, dev, ok := strings.Cut(name, "=")
	if !ok || qual == "" || dev == "" {
		return bad("not a qualified name")
	}
	vendor, class, ok := strings.Cut(qual, "/")
	if !ok || vendor == "" || class == "" {
		return bad("missing vendor or class")
	}
	if !vendorOrClass(vendor) {
		return bad("invalid vendor")
	}
	if !vendorOrClass(class) {
		return bad("invalid class")
	}
	if !deviceName(dev) {
		return bad("invalid device name")
	}
	return nil
}

func isLetter(c byte) bool { return ('A' <= c && c <= 'Z') || ('a' <= c && c <= 'z') }
func isAlnum(c byte) bool  { return isLetter(c) || ('0' <= c && c <= '9') }

func vendorOrClass(s string) bool {
	if !isLetter(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func deviceName(s string) bool {
	if !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '-' && c != '.' && c != ':' {
			return false
		}
	}
	return true
}
