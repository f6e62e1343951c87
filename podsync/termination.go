package podsync

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Kubelet's limits on termination messages.
const (
	// MaxTerminationMessageLength is read at most from a termination
	// message file (its last bytes).
	MaxTerminationMessageLength = 4 * 1024
	// MaxTerminationMessageLogLength and MaxTerminationMessageLogLines
	// bound the log tail used with FallbackToLogsOnError.
	MaxTerminationMessageLogLength = 2 * 1024
	MaxTerminationMessageLogLines  = 80
)

// terminationMessage is kubelet's convertToKubeContainerStatus for an
// exited container: the termination message file's content (found through
// the mount at the annotated path), or with FallbackToLogsOnError, a
// non-zero exit and no message, the tail of the container's log; appended
// to the runtime's message after ": ".
func terminationMessage(s *runtimeapi.ContainerStatus, exitCode int, reason string) string {
	msgPath := s.Annotations[AnnotationTerminationMessagePath]
	fallback := corev1.TerminationMessagePolicy(s.Annotations[AnnotationTerminationMessagePolicy]) == corev1.TerminationMessageFallbackToLogsOnError &&
		exitCode != 0 && reason != "ContainerCannotRun"
	msg, checkLogs := readTerminationFile(s, msgPath, fallback)
	if checkLogs {
		msg = readLogTail(s.GetLogPath(), MaxTerminationMessageLogLines, MaxTerminationMessageLogLength)
	}
	return msg
}

func readTerminationFile(s *runtimeapi.ContainerStatus, msgPath string, fallback bool) (string, bool) {
	if msgPath == "" {
		return "", fallback
	}
	if !path.IsAbs(msgPath) {
		msgPath = "/" + msgPath
	}
	for _, m := range s.Mounts {
		if m.ContainerPath != msgPath {
			continue
		}
		data, err := readAtMostTail(m.HostPath, MaxTerminationMessageLength)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return "", fallback
			}
			return fmt.Sprintf("Error on reading termination log %s: %v", m.HostPath, err), false
		}
		return string(data), fallback && len(data) == 0
	}
	return "", fallback
}

// readAtMostTail reads the last max bytes of a regular file; a FIFO or
// device written by a hostile container is not waited on.
func readAtMostTail(name string, max int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	if size := fi.Size(); size > max {
		if _, err := f.Seek(size-max, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// readLogTail is kubelet's readLastStringFromContainerLogs for CRI log
// files: the content of the last lines (at most lines of them) joined as
// the container wrote them, of which the last maxBytes are kept.
func readLogTail(name string, lines, maxBytes int) string {
	// 64 KiB holds 80 lines of any log a container would want shown; a
	// longer line is cut, as the result keeps only 2 KiB anyway.
	raw, err := readAtMostTail(name, 64*1024)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	return string(tailCRILog(raw, lines, maxBytes))
}

// tailCRILog parses the last lines of a CRI log ("<time> <stream> <P|F>
// <content>" per line) into the content they carry, keeping maxBytes.
func tailCRILog(raw []byte, lines, maxBytes int) []byte {
	raw = bytes.TrimSuffix(raw, []byte("\n"))
	if len(raw) == 0 {
		return nil
	}
	all := bytes.Split(raw, []byte("\n"))
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	var out []byte
	for _, l := range all {
		fields := bytes.SplitN(l, []byte(" "), 4)
		if len(fields) < 3 {
			continue // not a CRI log line (or cut by the read window)
		}
		content, tag := []byte(nil), fields[2]
		if len(fields) == 4 {
			content = fields[3]
		}
		out = append(out, content...)
		if !bytes.Equal(tag, []byte("P")) {
			out = append(out, '\n')
		}
	}
	if len(out) > maxBytes {
		out = out[len(out)-maxBytes:]
	}
	return out
}
