package criconfig

import (
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// MasterServiceNamespace and MasterServiceName name the Service whose
// variables every container gets, whatever its enableServiceLinks: the
// API server's (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT), which
// client-go's in-cluster config reads.
const (
	MasterServiceNamespace = "default"
	MasterServiceName      = "kubernetes"
)

// ServiceEnv is kubelet's getServiceEnvVarMap given the services it
// listed: the variables of the "kubernetes" Service of the "default"
// namespace, always, and with enableServiceLinks those of every Service
// of the pod's namespace, a Service of the pod's namespace named
// "kubernetes" taking the place of the default one. Services with no
// cluster IP ("" or "None", headless and ExternalName ones) give nothing;
// the others give ServiceEnvVars' variables. services may hold Services
// of any namespace; those of other namespaces are ignored.
//
// Where two Services would set the same variable (a Service "a" with a
// port named "b-port" and a Service "a-service-port-b" do), kubelet's
// winner depends on a map's order; here the Service whose name sorts last
// wins, so the answer is stable.
func ServiceEnv(namespace string, enableServiceLinks bool, services []*corev1.Service) map[string]string {
	chosen := map[string]*corev1.Service{}
	for _, svc := range services {
		if !serviceIPSet(svc) {
			continue
		}
		switch {
		case svc.Namespace == MasterServiceNamespace && svc.Name == MasterServiceName:
			if _, ok := chosen[svc.Name]; !ok {
				chosen[svc.Name] = svc
			}
		case svc.Namespace == namespace && enableServiceLinks:
			chosen[svc.Name] = svc
		}
	}
	names := make([]string, 0, len(chosen))
	for name := range chosen {
		names = append(names, name)
	}
	sort.Strings(names)
	env := map[string]string{}
	for _, name := range names {
		for _, e := range serviceEnvVars(nil, chosen[name]) {
			env[e.Name] = e.Value
		}
	}
	return env
}

// ServiceEnvVars is kubelet's envvars.FromServices: for each Service with
// a cluster IP, in order, NAME_SERVICE_HOST, NAME_SERVICE_PORT (its first
// port), NAME_SERVICE_PORT_PORTNAME for each named port, then Docker's
// link variables: NAME_PORT (the first port's URL) and, for each port,
// NAME_PORT_<port>_<PROTO> (proto://host:port, IPv6 hosts in brackets)
// with its _PROTO, _PORT and _ADDR. NAME is the Service's name upper-cased
// with '-' as '_'; the protocol is TCP when unset. A Service without
// ports (the API server stores none with a cluster IP; kubelet would
// panic on it) gives nothing.
func ServiceEnvVars(services []*corev1.Service) []EnvVar {
	var out []EnvVar
	for _, svc := range services {
		if serviceIPSet(svc) {
			out = serviceEnvVars(out, svc)
		}
	}
	return out
}

func serviceIPSet(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

func serviceEnvVars(out []EnvVar, svc *corev1.Service) []EnvVar {
	ports := svc.Spec.Ports
	if len(ports) == 0 {
		return out
	}
	ip := svc.Spec.ClusterIP
	name := envName(svc.Name)
	first := strconv.Itoa(int(ports[0].Port))
	out = append(out, EnvVar{name + "_SERVICE_HOST", ip}, EnvVar{name + "_SERVICE_PORT", first})
	for _, p := range ports {
		if p.Name != "" {
			out = append(out, EnvVar{name + "_SERVICE_PORT_" + envName(p.Name), strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(corev1.ProtocolTCP)
		}
		lower := strings.ToLower(proto)
		port := strconv.Itoa(int(p.Port))
		url := lower + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			out = append(out, EnvVar{name + "_PORT", url})
		}
		prefix := name + "_PORT_" + port + "_" + strings.ToUpper(proto)
		out = append(out,
			EnvVar{prefix, url},
			EnvVar{prefix + "_PROTO", lower},
			EnvVar{prefix + "_PORT", port},
			EnvVar{prefix + "_ADDR", ip})
	}
	return out
}

// envName is a Service or port name as kubelet puts it in a variable.
func envName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}
