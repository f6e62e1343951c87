package staticpods

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

func podNames(pods []*corev1.Pod) string {
	var n []string
	for _, p := range pods {
		n = append(n, p.Name)
	}
	sort.Strings(n)
	return strings.Join(n, " ")
}
