package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// auditPolicy logs every request of a node (group system:nodes) at its
// arrival (stage RequestReceived, which counts it: a watch when it
// starts, not when it ends) and at its completion (ResponseComplete, for
// its response code), with its metadata only; nothing of anyone else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["ResponseStarted", "Panic"]
rules:
- level: Metadata
  userGroups: ["system:nodes"]
- level: None
`

// auditEvent is what auditCounts reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// auditCounts counts the requests of user received in [from, to) in the
// API server's audit log, by "verb resource[/subresource]" (the path for
// a request about no object, e.g. discovery), and those of them answered
// with an error, by "verb resource code".
func auditCounts(path, user string, from, to time.Time) (counts, failed map[string]float64, _ error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return countAudit(f, user, from, to)
}

func countAudit(r io.Reader, user string, from, to time.Time) (counts, failed map[string]float64, _ error) {
	out, failed := map[string]float64{}, map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, nil, fmt.Errorf("audit log: %w", err)
		}
		if e.User.Username != user || e.RequestReceivedTimestamp.Before(from) || !e.RequestReceivedTimestamp.Before(to) {
			continue
		}
		switch {
		case e.Stage == "RequestReceived":
			out[auditKey(e)]++
		case e.Stage == "ResponseComplete" && e.ResponseStatus != nil && e.ResponseStatus.Code >= 400:
			failed[fmt.Sprintf("%s %d", auditKey(e), e.ResponseStatus.Code)]++
		}
	}
	return out, failed, sc.Err()
}

func auditKey(e auditEvent) string {
	if e.ObjectRef == nil || e.ObjectRef.Resource == "" {
		p, _, _ := strings.Cut(e.RequestURI, "?")
		return e.Verb + " " + p
	}
	k := e.Verb + " " + e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		k += "/" + e.ObjectRef.Subresource
	}
	return k
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

// scaled is m with every value multiplied by f.
func scaled(m map[string]float64, f float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v * f
	}
	return out
}

// printSide prints one node's figures for one N and its breakdowns.
func printSide(w io.Writer, r sideResult) {
	perStart := 1 / float64(r.n)
	fmt.Fprintf(w, "%-8s N=%d  burst %v: CPU %.3f s (%.1f ms/pod), API %.0f (%.2f/pod), CRI %.0f (%.1f/pod) | steady: CPU %.3f s/min, RSS %.1f MiB (max %.1f), API %.1f/min, CRI %.1f/min | load %s / %s\n",
		r.side, r.n, r.burst.Round(100*time.Millisecond), r.burstCPU, 1000*r.burstCPU*perStart, sum(r.burstAPI), sum(r.burstAPI)*perStart,
		sum(r.burstCRI), sum(r.burstCRI)*perStart, r.cpuPerMin, r.rssMiB, r.rssMaxMiB, sum(r.apiPerMin), sum(r.criPerMin), r.loadBefore, r.loadAfter)
	fmt.Fprintf(w, "    RSS at the window's end: %s\n", r.rssParts)
	fmt.Fprintf(w, "    API per pod start: %s\n", methods(scaled(r.burstAPI, perStart)))
	if len(r.burstAPIFailed) > 0 {
		fmt.Fprintf(w, "    API errors in the burst (count): %s\n", methods(r.burstAPIFailed))
	}
	fmt.Fprintf(w, "    API per steady min: %s\n", methods(r.apiPerMin))
	fmt.Fprintf(w, "    CRI per pod start: %s\n", methods(scaled(r.burstCRI, perStart)))
	fmt.Fprintf(w, "    CRI per steady min: %s\n", methods(r.criPerMin))
}

// printClusterRatios prints, per N, podstart's figures over kubelet's,
// against issue 41's targets.
func printClusterRatios(w io.Writer, rs []sideResult) {
	by := map[int]map[string]sideResult{}
	var ns []int
	for _, r := range rs {
		if by[r.n] == nil {
			by[r.n] = map[string]sideResult{}
			ns = append(ns, r.n)
		}
		by[r.n][r.side] = r
	}
	sort.Ints(ns)
	fmt.Fprintf(w, "podstart / kubelet (target): steady CPU (<= 0.2) | RSS (<= 0.4) | CPU per pod start (<= 0.25) | API per pod start (<= 1) | API per steady min (<= 1)\n")
	fmt.Fprintf(w, "%5s | %-26s | %-26s | %-28s | %-24s | %-24s\n", "N", "CPU s/min kub / pod = x", "RSS MiB kub / pod = x", "CPU ms/start kub / pod = x", "API/start kub / pod = x", "API/min kub / pod = x")
	for _, n := range ns {
		k, okk := by[n]["kubelet"]
		p, okp := by[n]["podstart"]
		if !okk || !okp {
			continue
		}
		cell := func(kv, pv float64, prec int) string {
			return fmt.Sprintf("%.*f / %.*f = %.3f", prec, kv, prec, pv, ratio(pv, kv))
		}
		fmt.Fprintf(w, "%5d | %-26s | %-26s | %-28s | %-24s | %-24s\n", n,
			cell(k.cpuPerMin, p.cpuPerMin, 3), cell(k.rssMiB, p.rssMiB, 1),
			cell(1000*k.burstCPU/float64(n), 1000*p.burstCPU/float64(n), 1),
			cell(sum(k.burstAPI)/float64(n), sum(p.burstAPI)/float64(n), 2),
			cell(sum(k.apiPerMin), sum(p.apiPerMin), 1))
	}
}
