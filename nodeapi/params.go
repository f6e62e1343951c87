package nodeapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// errDecode is kubelet's answer to a query it cannot decode.
var errDecode = errors.New(`{"message": "Unable to decode query."}`)

// LogOptions decodes a /containerLogs query into PodLogOptions as
// kubelet does (its parameter codec, locked to v1): "tail" is the old name
// of tailLines ("all": no limit); booleans are true unless "false" or "0";
// integers in base 10; sinceTime in RFC 3339.
func LogOptions(query url.Values) (*corev1.PodLogOptions, error) {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	if tail := q.Get("tail"); tail != "" {
		q["tailLines"] = []string{tail}
		if tail == "all" {
			delete(q, "tailLines")
		}
	}
	o := &corev1.PodLogOptions{}
	o.Container = first(q, "container")
	o.Follow = boolParam(q, "follow")
	o.Previous = boolParam(q, "previous")
	o.Timestamps = boolParam(q, "timestamps")
	o.InsecureSkipTLSVerifyBackend = boolParam(q, "insecureSkipTLSVerifyBackend")
	var err error
	if o.SinceSeconds, err = intParam(q, "sinceSeconds"); err != nil {
		return nil, errDecode
	}
	if o.TailLines, err = intParam(q, "tailLines"); err != nil {
		return nil, errDecode
	}
	if o.LimitBytes, err = intParam(q, "limitBytes"); err != nil {
		return nil, errDecode
	}
	if vs, ok := q["sinceTime"]; ok && len(vs) > 0 && vs[0] != "" {
		t, err := time.Parse(time.RFC3339, vs[0])
		if err != nil {
			return nil, errDecode
		}
		mt := metav1.NewTime(t)
		o.SinceTime = &mt
	}
	if vs, ok := q["stream"]; ok && len(vs) > 0 {
		s := vs[0]
		o.Stream = &s
	}
	return o, nil
}

func first(q url.Values, k string) string {
	if vs := q[k]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// boolParam is apimachinery's Convert_Slice_string_To_bool: absent or
// empty is false, "false" and "0" (any case) are false, anything else true.
func boolParam(q url.Values, k string) bool {
	vs, ok := q[k]
	if !ok || len(vs) == 0 {
		return false
	}
	switch strings.ToLower(vs[0]) {
	case "false", "0":
		return false
	}
	return true
}

func intParam(q url.Values, k string) (*int64, error) {
	vs, ok := q[k]
	if !ok || len(vs) == 0 {
		return nil, nil
	}
	if vs[0] == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(vs[0], 10, 64)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// ValidateLogOptions is the API server's ValidatePodLogOptions, which
// kubelet applies to the options it decoded (422 when it fails): tailLines
// not negative, limitBytes and sinceSeconds at least 1, not both
// sinceSeconds and sinceTime, a known stream, and tailLines only with the
// stream All.
func ValidateLogOptions(o *corev1.PodLogOptions) error {
	var errs []string
	if o.TailLines != nil && *o.TailLines < 0 {
		errs = append(errs, "tailLines: Invalid value: must be greater than or equal to 0")
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		errs = append(errs, "limitBytes: Invalid value: must be greater than 0")
	}
	if o.SinceSeconds != nil && o.SinceTime != nil {
		errs = append(errs, "sinceSeconds: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified")
	}
	if o.SinceSeconds != nil && *o.SinceSeconds < 1 {
		errs = append(errs, "sinceSeconds: Invalid value: must be greater than 0")
	}
	if o.Stream != nil {
		switch *o.Stream {
		case corev1.LogStreamStdout, corev1.LogStreamStderr, corev1.LogStreamAll:
		default:
			errs = append(errs, fmt.Sprintf("stream: Unsupported value: %q", *o.Stream))
		}
		if *o.Stream != corev1.LogStreamAll && o.TailLines != nil {
			errs = append(errs, "tailLines: Forbidden: `tailLines` and specific `stream` are mutually exclusive for now")
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, ", "))
	}
	return nil
}

// StreamOptions is what an exec or attach session carries, from the
// query as kubelet's remotecommand.NewOptions reads it: a parameter is
// on only when it is "1"; with a TTY, stderr is merged into stdout.
type StreamOptions struct {
	Stdin, Stdout, Stderr, TTY bool
}

// errNoStreams is kubelet's text for a session without streams.
var errNoStreams = errors.New("you must specify at least 1 of stdin, stdout, stderr")

func streamOptions(r *http.Request) (StreamOptions, error) {
	o := StreamOptions{
		TTY:    r.FormValue("tty") == "1",
		Stdin:  r.FormValue("input") == "1",
		Stdout: r.FormValue("output") == "1",
		Stderr: r.FormValue("error") == "1",
	}
	if o.TTY && o.Stderr {
		o.Stderr = false
	}
	if !o.Stdin && !o.Stdout && !o.Stderr {
		return o, errNoStreams
	}
	return o, nil
}
