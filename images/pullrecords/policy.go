package pullrecords

import (
	"errors"
	"fmt"
	"strings"

	"github.com/distribution/reference"
)

// Policy is kubelet's imagePullCredentialsVerificationPolicy: when an
// image already on the node needs the pod's credentials to be verified.
type Policy string

// The policies of kubelet v1.37.2 (k8s.io/kubelet/config/v1beta1).
const (
	// NeverVerify: any pod on the node may use any image on the node.
	NeverVerify Policy = "NeverVerify"
	// NeverVerifyPreloadedImages: images not pulled by the image manager
	// (no pulled record and no pull intent) need no verification; those
	// it pulled do. Kubelet's default.
	NeverVerifyPreloadedImages Policy = "NeverVerifyPreloadedImages"
	// NeverVerifyAllowlistedImages: only images in the allowlist need no
	// verification, however they came to the node.
	NeverVerifyAllowlistedImages Policy = "NeverVerifyAllowlistedImages"
	// AlwaysVerify: every image needs verification, preloaded ones too.
	AlwaysVerify Policy = "AlwaysVerify"
)

// Errors of New, matchable with errors.Is.
var (
	ErrUnknownPolicy    = errors.New("unknown image pull credential verification policy")
	ErrInvalidAllowlist = errors.New("invalid preloaded images verification allowlist")
)

// enforcer is kubelet's ImagePullPolicyEnforcer.
type enforcer func(image string, pulledByManager bool) bool

func newEnforcer(p Policy, allowlist []string) (enforcer, error) {
	switch p {
	case NeverVerify:
		return func(string, bool) bool { return false }, nil
	case NeverVerifyPreloadedImages, "":
		return func(_ string, pulled bool) bool { return pulled }, nil
	case NeverVerifyAllowlistedImages:
		a, err := newAllowlist(allowlist)
		if err != nil {
			return nil, err
		}
		return func(image string, _ bool) bool { return !a.matches(image) }, nil
	case AlwaysVerify:
		return func(string, bool) bool { return true }, nil
	}
	return nil, fmt.Errorf("%w: %v", ErrUnknownPolicy, p)
}

type allowlist struct {
	exact    map[string]bool
	prefixes []string
}

func newAllowlist(patterns []string) (*allowlist, error) {
	a := &allowlist{exact: map[string]bool{}}
	for _, p := range patterns {
		norm, wildcard, err := allowlistPattern(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidAllowlist, err)
		}
		if wildcard {
			a.prefixes = append(a.prefixes, norm)
		} else {
			a.exact[norm] = true
		}
	}
	return a, nil
}

func (a *allowlist) matches(image string) bool {
	name, err := TrimTagDigest(image)
	if err != nil {
		// Best effort with what the user wrote, as kubelet.
		name = image
	}
	if a.exact[name] {
		return true
	}
	for _, p := range a.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// ValidateAllowlist checks preloadedImagesVerificationAllowlist patterns
// as kubelet does: an image name without tag or digest, or a prefix ending
// in "/*"; no spaces around, no other "*". Errors match
// ErrInvalidAllowlist.
func ValidateAllowlist(patterns []string) error {
	_, err := newAllowlist(patterns)
	return err
}

// allowlistPattern is kubelet's getAllowlistImagePattern.
func allowlistPattern(pattern string) (string, bool, error) {
	if pattern != strings.TrimSpace(pattern) {
		return "", false, fmt.Errorf("leading/trailing spaces are not allowed: %s", pattern)
	}
	trimmed, wildcard := pattern, false
	if strings.HasSuffix(pattern, "/*") {
		wildcard, trimmed = true, strings.TrimSuffix(pattern, "*")
	}
	if trimmed == "" {
		return "", false, fmt.Errorf("the supplied pattern is too short: %s", pattern)
	}
	if strings.ContainsRune(trimmed, '*') {
		return "", false, fmt.Errorf("not a valid wildcard pattern, only patterns ending with '/*' are allowed: %s", pattern)
	}
	if wildcard {
		if len(trimmed) == 1 {
			return "", false, fmt.Errorf("at least registry hostname is required")
		}
		return trimmed, true, nil
	}
	name, err := TrimTagDigest(trimmed)
	if err != nil {
		return "", false, fmt.Errorf("failed to parse as an image name: %w", err)
	}
	if name != trimmed {
		return "", false, fmt.Errorf("neither tag nor digest is accepted in an image reference: %s", pattern)
	}
	return trimmed, false, nil
}

// TrimTagDigest removes the tag and digest from an image as written in a
// pod ("repo/app:1@sha256:…" is "repo/app"), without normalising it: the
// key of a pulled record's credential mapping (kubelet's
// trimImageTagDigest).
func TrimTagDigest(image string) (string, error) {
	parsed, err := reference.Parse(image)
	if err != nil {
		return "", err
	}
	if d, ok := parsed.(reference.Digested); ok {
		var found bool
		digest := d.Digest().String()
		if image, found = strings.CutSuffix(image, "@"+digest); !found {
			return "", fmt.Errorf("digest was not specified last, this does not appear to be a valid image spec: %q", image)
		}
	}
	if t, ok := parsed.(reference.Tagged); ok {
		var found bool
		if image, found = strings.CutSuffix(image, ":"+t.Tag()); !found {
			return "", fmt.Errorf("tag %q was not specified last (or before the digest), this does not appear to be a valid image spec: %q", t.Tag(), image)
		}
	}
	return image, nil
}
