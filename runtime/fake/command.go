package fake

import (
	"errors"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CommandStart is the StartFunc of a runtime built without WithStartFunc:
// it reads the container's command line (the config's Command followed by
// its Args, as a runtime joins an entrypoint and its arguments) and answers
// what that command would do, as the package doc's table lists: "true"
// exits 0, "false" 1, "sh -c 'exit 3'" 3, "sleep 5" exits 0 after five
// seconds on the runtime's clock; a command it does not know, and a config
// without Command (the image's own entrypoint), keep running (nil). A
// StartFunc of a test may call it for the containers it does not script.
func CommandStart(config *runtimeapi.ContainerConfig) *Exit {
	if len(config.GetCommand()) == 0 {
		return nil
	}
	argv := append(append([]string(nil), config.GetCommand()...), config.GetArgs()...)
	return commandExit(argv)
}

// commandExit is what argv does: nil keeps running.
func commandExit(argv []string) *Exit {
	if len(argv) == 0 {
		return nil
	}
	switch path.Base(argv[0]) {
	case "true":
		return &Exit{Code: 0}
	case "false":
		return &Exit{Code: 1}
	case "sleep":
		return sleepExit(argv[1:])
	case "sh", "bash", "ash", "dash":
		if len(argv) >= 3 && argv[1] == "-c" {
			return scriptExit(argv[2]) // later arguments are $0, $1, …
		}
	}
	return nil
}

// shellSpecial are the characters that make a script more than one simple
// command of plain words (quotes, expansions, redirections, lists, globs,
// comments); a script with any of them is not read.
const shellSpecial = "\n;&|<>()$`\\\"'*?[]{}#~!"

// scriptExit is what sh -c script does, for a script that is one simple
// command the fake knows ("exit N", "true", "false", "sleep N"); nil for
// any other.
func scriptExit(script string) *Exit {
	if strings.ContainsAny(script, shellSpecial) {
		return nil
	}
	words := strings.Fields(script)
	if len(words) == 0 {
		return &Exit{Code: 0} // sh -c "" succeeds
	}
	if words[0] != "exit" {
		return commandExit(words)
	}
	switch len(words) {
	case 1:
		return &Exit{Code: 0} // the status of the last command: none ran
	case 2:
		n, err := strconv.ParseUint(words[1], 10, 64)
		if err != nil {
			return nil // "exit -1", "exit x", an overflow: shells disagree
		}
		return &Exit{Code: int32(n % 256)} // an exit status is 8 bits
	}
	return nil
}

// maxSleep is the longest sleep that ends: a longer one (as "sleep 1e300")
// does not end in a test's life, and runs as "sleep infinity".
const maxSleep = time.Duration(math.MaxInt64)

// sleepExit is what sleep args does, as GNU coreutils' and busybox's sleep:
// the operands (numbers of seconds, maybe fractional, each with an
// optional suffix s, m, h or d) are summed and it exits 0 after that long;
// "infinity" (or a sum too long for a time.Duration) never ends (nil); no
// operand, or one that is negative, NaN or not a number, fails at once
// with 1 as sleep's usage error.
func sleepExit(args []string) *Exit {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return &Exit{Code: 1} // "sleep: missing operand"
	}
	var total float64 // seconds
	for _, a := range args {
		s, ok := sleepSeconds(a)
		if !ok {
			return &Exit{Code: 1} // "sleep: invalid time interval"
		}
		total += s
	}
	if total*float64(time.Second) >= float64(maxSleep) { // +Inf too
		return nil
	}
	return &Exit{Code: 0, After: time.Duration(total * float64(time.Second))}
}

// sleepSeconds reads one operand of sleep in seconds; +Inf for infinity.
func sleepSeconds(a string) (float64, bool) {
	if a == "" || a[0] == '-' {
		return 0, false // "-1" is an unknown option to sleep
	}
	unit := 1.0
	switch a[len(a)-1] {
	case 's':
		unit, a = 1, a[:len(a)-1]
	case 'm':
		unit, a = 60, a[:len(a)-1]
	case 'h':
		unit, a = 3600, a[:len(a)-1]
	case 'd':
		unit, a = 86400, a[:len(a)-1]
	}
	f, err := strconv.ParseFloat(a, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) { // out of range: ±Inf or 0, read as such
		return 0, false
	}
	if math.IsNaN(f) || f < 0 {
		return 0, false
	}
	return f * unit, true
}
