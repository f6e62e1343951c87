package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	containerd401 := `failed to pull and unpack image "127.0.0.1:5000/busybox:1.35": failed to resolve reference "127.0.0.1:5000/busybox:1.35": pulling from host 127.0.0.1:5000 failed with status code [manifests 1.35]: 401 Unauthorized`
	tests := []struct {
		name  string
		err   error
		class error
		code  codes.Code
	}{
		{"unavailable", status.Error(codes.Unavailable, "connection refused"), ErrUnavailable, codes.Unavailable},
		{"not found", status.Error(codes.NotFound, "no such container"), ErrNotFound, codes.NotFound},
		{"deadline status", status.Error(codes.DeadlineExceeded, "too slow"), ErrDeadlineExceeded, codes.DeadlineExceeded},
		{"deadline context", context.DeadlineExceeded, ErrDeadlineExceeded, codes.DeadlineExceeded},
		{"wrapped deadline context", fmt.Errorf("x: %w", context.DeadlineExceeded), ErrDeadlineExceeded, codes.DeadlineExceeded},
		{"canceled", context.Canceled, ErrCanceled, codes.Canceled},
		{"unimplemented", status.Error(codes.Unimplemented, "unknown method RuntimeConfig"), ErrUnimplemented, codes.Unimplemented},
		{"unauthenticated code", status.Error(codes.Unauthenticated, "no"), ErrUnauthorized, codes.Unauthenticated},
		{"containerd 401 as Unknown", status.Error(codes.Unknown, containerd401), ErrUnauthorized, codes.Unknown},
		{"403 as Unknown", status.Error(codes.Unknown, "pulling failed: 403 Forbidden"), ErrUnauthorized, codes.Unknown},
		{"containerd 2 refused credentials", status.Error(codes.Unknown, `failed to pull and unpack image "127.0.0.1:5060/busybox:1.35": failed to resolve image: pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials`), ErrUnauthorized, codes.Unknown},
		{"registry unavailable", status.Error(codes.Unknown, "RegistryUnavailable: dial tcp: refused"), ErrRegistryUnavailable, codes.Unknown},
		{"signature", status.Error(codes.Unknown, "SignatureValidationFailed: bad sig"), ErrSignatureValidationFailed, codes.Unknown},
		{"plain error", errors.New("boom"), nil, codes.Unknown},
		{"unknown status", status.Error(codes.Unknown, "boom"), nil, codes.Unknown},
		{"wrapped status", fmt.Errorf("ctx: %w", status.Error(codes.NotFound, "x")), ErrNotFound, codes.NotFound},
	}
	all := []error{ErrUnavailable, ErrNotFound, ErrDeadlineExceeded, ErrCanceled, ErrUnimplemented, ErrUnauthorized, ErrRegistryUnavailable, ErrSignatureValidationFailed}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(tt.err)
			for _, class := range all {
				if want := class == tt.class; errors.Is(got, class) != want {
					t.Errorf("errors.Is(%v, %v) = %v, want %v", got, class, !want, want)
				}
			}
			var ce *Error
			if !errors.As(got, &ce) || ce.Code != tt.code {
				t.Errorf("code = %v, want %v", ce, tt.code)
			}
			if got.Error() != tt.err.Error() {
				t.Errorf("text changed: %q, want %q", got.Error(), tt.err.Error())
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("classified error does not wrap the original")
			}
			if again := Classify(got); again != got {
				t.Errorf("Classify is not idempotent")
			}
			if s := GRPCStatus(got); s.Code() != tt.code {
				t.Errorf("GRPCStatus code = %v, want %v", s.Code(), tt.code)
			}
		})
	}
	if Classify(nil) != nil {
		t.Error("Classify(nil) != nil")
	}
}

func TestGRPCStatusKeepsMessage(t *testing.T) {
	t.Parallel()
	err := Classify(fmt.Errorf("wrapped: %w", status.Error(codes.NotFound, "container x not found")))
	if s := GRPCStatus(err); s.Message() != "container x not found" {
		t.Errorf("message = %q", s.Message())
	}
}

func TestParseEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		endpoint, want string
		wantErr        bool
	}{
		{"unix:///run/containerd/containerd.sock", "unix:///run/containerd/containerd.sock", false},
		{"/var/run/crio/crio.sock", "unix:///var/run/crio/crio.sock", false},
		{"unix:///var/run/crio/crio.sock", "unix:///var/run/crio/crio.sock", false},
		{"tcp://127.0.0.1:5000", "", true},
		{"npipe:////./pipe/containerd", "", true},
		{"", "", true},
		{"unix://", "", true},
	}
	for _, tt := range tests {
		got, err := ParseEndpoint(tt.endpoint)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseEndpoint(%q) = %q, %v; want %q, err=%v", tt.endpoint, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !errors.Is(err, ErrUnsupportedEndpoint) {
			t.Errorf("ParseEndpoint(%q) error %v is not ErrUnsupportedEndpoint", tt.endpoint, err)
		}
	}
}

// A registry that refuses connections, as containerd reports it, is
// unavailable; the gRPC code stays what it was (Unknown).
func TestRegistryUnreachable(t *testing.T) {
	for _, msg := range []string{
		`failed to pull and unpack image "127.0.0.1:5999/busybox:1.35": failed to resolve reference "127.0.0.1:5999/busybox:1.35": failed to do request: Head "http://127.0.0.1:5999/v2/busybox/manifests/1.35": dial tcp 127.0.0.1:5999: connect: connection refused`,
		`failed to resolve reference "nope.invalid/x:1": failed to do request: Head "https://nope.invalid/v2/x/manifests/1": dial tcp: lookup nope.invalid on 10.0.0.2:53: no such host`,
	} {
		err := Classify(status.Error(codes.Unknown, msg))
		if !errors.Is(err, ErrRegistryUnavailable) {
			t.Errorf("%q: not ErrRegistryUnavailable: %v", msg, err)
		}
	}
	if err := Classify(status.Error(codes.Unknown, "failed to pull: not found")); errors.Is(err, ErrRegistryUnavailable) {
		t.Error("a missing image classified as an unavailable registry")
	}
}
