package dratier

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// call is one gRPC request the driver served, from its log at -v=6
// (kubeletplugin's interceptor logs "handling request" with the request,
// then "handling request succeeded" with the response, under one
// requestID; a stream, "handling stream", has neither).
type call struct {
	ID       string
	Method   string // the last element of the full method name
	Request  string
	Response string
	Failed   bool
}

// parseCalls reads the driver's calls from its klog text log, in the
// order they were made.
func parseCalls(path string) ([]call, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []call
	byID := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var msg string
		switch {
		case strings.Contains(line, `] "handling request succeeded"`):
			msg = "ok"
		case strings.Contains(line, `] "handling request failed"`):
			msg = "failed"
		case strings.Contains(line, `] "handling request"`), strings.Contains(line, `] "handling stream"`):
			msg = "request"
		default:
			continue
		}
		id, method := value(line, "requestID"), value(line, "method")
		if i := strings.LastIndex(method, "/"); i >= 0 {
			method = method[i+1:]
		}
		switch msg {
		case "request":
			byID[id] = len(out)
			out = append(out, call{ID: id, Method: method, Request: value(line, "request")})
		case "ok":
			if i, ok := byID[id]; ok {
				out[i].Response = value(line, "response")
			}
		case "failed":
			if i, ok := byID[id]; ok {
				out[i].Failed = true
			}
		}
	}
	return out, sc.Err()
}

// value is key's value in a klog text line: a quoted string unquoted, or
// the bare word.
func value(line, key string) string {
	i := strings.Index(line, " "+key+"=")
	if i < 0 {
		return ""
	}
	rest := line[i+len(key)+2:]
	if strings.HasPrefix(rest, `"`) {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return rest
		}
		s, _ := strconv.Unquote(q)
		return s
	}
	if j := strings.IndexByte(rest, ' '); j >= 0 {
		return rest[:j]
	}
	return rest
}

// about returns the calls of method whose request names the claim UID.
func about(calls []call, method, uid string) []call {
	var out []call
	for _, c := range calls {
		if c.Method == method && strings.Contains(c.Request, uid) {
			out = append(out, c)
		}
	}
	return out
}

// methods lists the distinct methods called, in first-call order.
func methods(calls []call) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range calls {
		if !seen[c.Method] {
			seen[c.Method] = true
			out = append(out, c.Method)
		}
	}
	return out
}
