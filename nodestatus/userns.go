package nodestatus

import (
	"bufio"
	"fmt"
	"os"
)

// uidMapInUserNamespace is how kubelet v1.37.2 (through
// github.com/moby/sys/userns) reads the first line of /proc/self/uid_map:
// an empty map is a user namespace being set up, "0 0 4294967295" is the
// initial namespace, any other mapping is a user namespace, and a line
// that does not parse as three numbers is taken for the initial one.
func uidMapInUserNamespace(line string) bool {
	if line == "" {
		return true
	}
	var inside, outside, length int64
	if _, err := fmt.Sscanf(line, "%d %d %d", &inside, &outside, &length); err != nil {
		return false
	}
	return !(inside == 0 && outside == 0 && length == 4294967295)
}

// inUserNamespace reads the first line of a uid_map file; a file that
// cannot be opened or read (a kernel without user namespaces) means no.
func inUserNamespace(uidMap string) bool {
	f, err := os.Open(uidMap)
	if err != nil {
		return false
	}
	defer f.Close()
	line, _, err := bufio.NewReader(f).ReadLine()
	if err != nil {
		return false
	}
	return uidMapInUserNamespace(string(line))
}
