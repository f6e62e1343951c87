package staticpods

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"

	corev1 "k8s.io/api/core/v1"
)

// ErrHTTP matches a poll of the URL source that got no usable answer (a
// transport error, a status other than 200, an empty body).
var ErrHTTP = errors.New("staticpods: reading the manifest URL failed")

// URLSource is kubelet's HTTP pod source (staticPodURL with
// staticPodURLHeader): the URL polled every period, its body a single pod
// or a v1 PodList.
type URLSource struct {
	url    string
	loc    string // url without its password, for refusals
	header http.Header
	node   string
	o      options
	data   []byte
}

// NewURLSource returns the source of the pods served at url (GET with
// header) for the node nodeName. Nothing is read until Run.
func NewURLSource(url string, header http.Header, nodeName string, opts ...Option) (*URLSource, error) {
	if url == "" || nodeName == "" {
		return nil, fmt.Errorf("%w: URL and node name are required", ErrBadConfig)
	}
	o := defaultOptions(DefaultHTTPCheckFrequency)
	for _, opt := range opts {
		opt(&o)
	}
	loc := url
	if u, err := neturl.Parse(url); err == nil {
		loc = u.Redacted()
	}
	return &URLSource{url: url, loc: loc, header: header.Clone(), node: nodeName, o: o}, nil
}

// poll is kubelet's extractFromURL: pods is the new snapshot when send.
func (s *URLSource) poll(ctx context.Context) (pods []*corev1.Pod, send bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrHTTP, err)
	}
	if s.header != nil {
		req.Header = s.header.Clone()
	}
	resp, err := s.o.client.Do(req)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrHTTP, err)
	}
	defer resp.Body.Close()
	data, err := readAtMost(resp.Body, MaxManifestSize)
	if err != nil {
		return nil, false, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("%w: %v", ErrHTTP, resp.Status)
	}
	if len(data) == 0 {
		// kubelet marks the source seen with no pods.
		return nil, true, fmt.Errorf("%w: zero-length data received", ErrHTTP)
	}
	if bytes.Equal(data, s.data) {
		return nil, false, nil
	}
	s.data = data
	o := Origin{Source: SourceHTTP, Location: s.url, NodeName: s.node}
	pod, parsed, singleErr := DecodePod(data, o)
	if parsed {
		if singleErr != nil {
			return nil, false, singleErr
		}
		return []*corev1.Pod{pod}, true, nil
	}
	list, parsed, listErr := DecodePodList(data, o)
	if parsed {
		if listErr != nil {
			return nil, false, listErr
		}
		return list, true, nil
	}
	return nil, false, &manifestError{msg: fmt.Sprintf("couldn't parse as single (%v) or multiple pods (%v)", singleErr, listErr), kind: ErrInvalidManifest}
}

// Run polls the URL at once and then every period, and sends the changes
// to out until ctx ends; it returns ctx's error. A failed poll keeps the
// pods (kubelet sends no update) except an empty body, which removes them
// all; a body equal to the last one is not decoded again.
func (s *URLSource) Run(ctx context.Context, out chan<- Update) error {
	m := newMerger(SourceHTTP, s.o.clock.Now)
	ticker := s.o.clock.NewTicker(s.o.period)
	defer ticker.Stop()
	for {
		pods, send, err := s.poll(ctx)
		if err != nil {
			s.o.onRefused(Refusal{s.loc, err})
		}
		if send {
			updates, dups := m.merge(pods)
			for _, d := range dups {
				s.o.onRefused(Refusal{s.loc, fmt.Errorf("%w %q, ignoring", ErrDuplicateName, d.Namespace+"/"+d.Name)})
			}
			for _, u := range updates {
				select {
				case out <- u:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		if s.o.listed != nil {
			s.o.listed()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C():
		}
	}
}
