package containerlogs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Timestamp layouts of the CRI log format.
const (
	// TimestampOutFormat is how a line's time is written when
	// LogOptions.Timestamp is set (kubelet's RFC3339NanoFixed): always nine
	// fractional digits, then one space before the line.
	TimestampOutFormat = "2006-01-02T15:04:05.000000000Z07:00"
	// timestampInFormat parses a CRI line's time (kubelet's
	// RFC3339NanoLenient): the fraction may be shorter or absent.
	timestampInFormat = "2006-01-02T15:04:05.999999999Z07:00"
)

// ErrUnsupportedLogFormat: the first line read is neither in the CRI log
// format nor in Docker's JSON log format, so nothing is read. Unlike
// kubelet's "unsupported log format: %q", the error never quotes the line.
var ErrUnsupportedLogFormat = errors.New("unsupported log format")

// errUnexpectedStream: a Docker JSON line names a stream other than stdout
// or stderr; kubelet stops reading there.
var errUnexpectedStream = errors.New("unexpected stream type")

// Line is one parsed line of a container log.
type Line struct {
	// Time is when the runtime read the bytes from the container.
	Time time.Time
	// Stream is stdout or stderr (runtimeapi.Stdout, runtimeapi.Stderr).
	// A Docker JSON line may name any stream.
	Stream runtimeapi.LogStreamType
	// Partial is true for a CRI line tagged P: the container's line goes on
	// in the next log line (of the same stream), and Content has no newline.
	Partial bool
	// Content is what the container wrote: for a full (F) CRI line with its
	// newline, if the file had one. It aliases the parsed bytes.
	Content []byte
}

// lineFormat is a parser of one log line; which one a read uses is decided
// by the first line it reads, as kubelet does.
type lineFormat func(raw []byte, l *Line) error

// ParseCRILine parses one line of the CRI log format,
//
//	<RFC 3339 time> <stdout|stderr> <tag>[:<tag>...] <content>
//
// as written by containerd and CRI-O: raw is the line with its newline,
// if any. The first tag is P for a partial line (its newline, if any, is
// not content) and F for a full one; further tags are ignored, any other
// first tag is read as full. The errors are kubelet's.
func ParseCRILine(raw []byte, l *Line) error {
	*l = Line{}
	i := bytes.IndexByte(raw, ' ')
	if i < 0 {
		return errors.New("timestamp is not found")
	}
	t, err := time.Parse(timestampInFormat, string(raw[:i]))
	if err != nil {
		return fmt.Errorf("unexpected timestamp format %q: %w", timestampInFormat, err)
	}
	l.Time = t
	rest := raw[i+1:]
	i = bytes.IndexByte(rest, ' ')
	if i < 0 {
		return errors.New("stream type is not found")
	}
	l.Stream = runtimeapi.LogStreamType(rest[:i])
	if l.Stream != runtimeapi.Stdout && l.Stream != runtimeapi.Stderr {
		return fmt.Errorf("unexpected stream type %q", l.Stream)
	}
	rest = rest[i+1:]
	i = bytes.IndexByte(rest, ' ')
	if i < 0 {
		return errors.New("log tag is not found")
	}
	tag := rest[:i]
	if j := bytes.Index(tag, []byte(runtimeapi.LogTagDelimiter)); j >= 0 {
		tag = tag[:j]
	}
	l.Partial = runtimeapi.LogTag(tag) == runtimeapi.LogTagPartial
	content := rest[i+1:]
	if l.Partial && len(content) > 0 && content[len(content)-1] == '\n' {
		content = content[:len(content)-1]
	}
	l.Content = content
	return nil
}

// dockerJSONLine is one line of Docker's json-file log driver.
type dockerJSONLine struct {
	Log    string    `json:"log,omitempty"`
	Stream string    `json:"stream,omitempty"`
	Time   time.Time `json:"time"`
}

// ParseDockerJSONLine parses one line of Docker's JSON log format,
//
//	{"log":"content\n","stream":"stdout","time":"2016-10-20T18:39:20.57606443Z"}
//
// which kubelet still reads (dockershim's logs). The stream is not checked
// here: reading stops at a line of another stream, as in kubelet.
func ParseDockerJSONLine(raw []byte, l *Line) error {
	*l = Line{}
	var j dockerJSONLine
	if err := json.Unmarshal(raw, &j); err != nil {
		return fmt.Errorf("failed with %v to unmarshal log %q", err, &j)
	}
	l.Time = j.Time
	l.Stream = runtimeapi.LogStreamType(j.Stream)
	l.Content = []byte(j.Log)
	return nil
}

// detectFormat returns the parser the first line read is in, trying the
// CRI format first, as kubelet does.
func detectFormat(raw []byte) (lineFormat, error) {
	var l Line
	if ParseCRILine(raw, &l) == nil {
		return ParseCRILine, nil
	}
	if ParseDockerJSONLine(raw, &l) == nil {
		return ParseDockerJSONLine, nil
	}
	// The line is not quoted: it may be any file's content.
	return nil, ErrUnsupportedLogFormat
}
