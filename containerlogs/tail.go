package containerlogs

import (
	"bytes"
	"io"
)

// tailBlockSize is how much of the file tailStart reads at a time,
// backwards from its end.
const tailBlockSize = 32 << 10

// tailStart returns the offset at which the last n lines of the file
// start: just after the (n+1)-th newline from the end, or 0 if the file
// has fewer. n < 0 means the whole file (0). As in kubelet, a last line
// without a newline is not counted. Memory is one block whatever n and
// the file's size; a file with fewer bytes than n+1 cannot hold n+1
// newlines and is not read at all.
func tailStart(f io.ReaderAt, n int64, size int64) (int64, error) {
	if n < 0 || n >= size {
		return 0, nil
	}
	want := n + 1 // the newline before the first line wanted
	var seen int64
	buf := make([]byte, min(tailBlockSize, size))
	for end := size; end > 0; {
		begin := max(end-int64(len(buf)), 0)
		b := buf[:end-begin]
		if _, err := f.ReadAt(b, begin); err != nil && err != io.EOF {
			return 0, err
		}
		c := int64(bytes.Count(b, []byte{'\n'}))
		if seen+c < want {
			seen += c
			end = begin
			continue
		}
		for i := len(b); ; {
			i = bytes.LastIndexByte(b[:i], '\n')
			if seen++; seen == want {
				return begin + int64(i) + 1, nil
			}
		}
	}
	return 0, nil
}
