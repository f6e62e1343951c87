package credentials

import (
	// The digest algorithms kubelet's image name parser registers, so that
	// sha384 and sha512 digests parse here as they do in kubelet, whatever
	// else the program links.
	_ "crypto/sha256"
	_ "crypto/sha512"
	"errors"
	"fmt"

	"github.com/distribution/reference"
)

// ErrInvalidImageName: an image reference does not parse. Errors from
// ParseImageName and Repository match it with errors.Is, and also the
// distribution/reference sentinel that says why (for example
// reference.ErrReferenceInvalidFormat, reference.ErrNameTooLong).
var ErrInvalidImageName = errors.New("invalid image name")

// DefaultTag is the tag an image reference with neither tag nor digest
// gets, as in kubelet.
const DefaultTag = "latest"

// ImageName is an image reference split as kubelet's
// parsers.ParseImageName splits it.
type ImageName struct {
	// Repository is the fully qualified repository, the string a Keyring
	// is looked up with: "docker.io/library/nginx" for "nginx".
	Repository string
	// Tag is the reference's tag, DefaultTag when it has neither tag nor
	// digest, and "" when it has only a digest.
	Tag string
	// Digest is the reference's digest ("sha256:..."), or "".
	Digest string
}

// ParseImageName is kubelet's parsers.ParseImageName: the reference is
// parsed as docker does (distribution/reference's ParseNormalizedNamed:
// a name with no registry is on docker.io, a one-element Docker Hub name
// is under library/), and a reference with neither tag nor digest gets
// DefaultTag. A reference that does not parse is an error matching
// ErrInvalidImageName, with kubelet's text ("couldn't parse image name
// %q: <reason>").
func ParseImageName(image string) (ImageName, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return ImageName{}, &imageNameError{image: image, err: err}
	}
	n := ImageName{Repository: named.Name()}
	if t, ok := named.(reference.Tagged); ok {
		n.Tag = t.Tag()
	}
	if d, ok := named.(reference.Digested); ok {
		n.Digest = d.Digest().String()
	}
	if n.Tag == "" && n.Digest == "" {
		n.Tag = DefaultTag
	}
	return n, nil
}

// Repository turns an image reference, as written in a pod ("nginx",
// "registry:5000/a/b:tag@sha256:..."), into the repository a Keyring is
// looked up with ("docker.io/library/nginx", "registry:5000/a/b"): tag
// and digest dropped, Docker Hub names qualified. It is the repository
// kubelet's image manager looks credentials up with. Errors are
// ParseImageName's.
func Repository(image string) (string, error) {
	n, err := ParseImageName(image)
	return n.Repository, err
}

// imageNameError keeps kubelet's text and matches ErrInvalidImageName and
// the reference package's reason.
type imageNameError struct {
	image string
	err   error
}

func (e *imageNameError) Error() string {
	return fmt.Sprintf("couldn't parse image name %q: %v", e.image, e.err)
}

func (e *imageNameError) Unwrap() []error { return []error{ErrInvalidImageName, e.err} }
