package diff

import (
	"fmt"
	"math/rand/v2"
)

// Rich random static pod manifests for the UID differential: every field
// kubelet's hash dumps, with quantities spelled in many ways (the dump
// holds a quantity's parsed form and cached string, which depend on the
// spelling). safe keeps to what a static pod may use (no API references),
// so that both sources keep most pods; otherwise anything goes, for the
// hash alone.

// quantitySpellings are resource.Quantity spellings with different
// internal states: canonical (string kept), non-canonical, exponents,
// binary suffixes, rounding to milli, beyond int64 (inf.Dec), plus JSON
// numbers.
var quantitySpellings = []any{
	"1", "1000m", "0.5", "500m", "1Gi", "1024Mi", "1e3", "1E3", "1k", "100M", "64Mi", "0", "0.0",
	"1.5", "2.50", "0.1m", "0.0001", "+1", "01", "1e-3", "123456789012345678901234567890", "8Ei", "1.5Gi",
	"250m", "100", "3", "12Ki", "7e2m", "-1", 1, 0.5, 1000, 2.5, 1e3,
}

// validQuantities are the spellings kubelet's decoder and validation
// accept for any resource (positive, parseable).
var validQuantities = []any{
	"1", "1000m", "0.5", "500m", "1Gi", "1024Mi", "1e3", "1E3", "1k", "100M", "64Mi", "0", "1.5", "2.50",
	"0.1m", "0.0001", "+1", "01", "1e-3", "250m", "100", "3", "12Ki", 1, 0.5, 1000, 2.5, 1e3,
}

func quantity(r *rand.Rand, safe bool) any {
	if safe {
		return pick(r, validQuantities)
	}
	return pick(r, quantitySpellings)
}

func resourceList(r *rand.Rand, safe bool, names ...string) map[string]any {
	m := map[string]any{}
	for _, n := range names {
		if r.IntN(2) == 0 {
			m[n] = quantity(r, safe)
		}
	}
	return m
}

func maybe(r *rand.Rand, p int) bool { return r.IntN(p) == 0 }

func labelSelector(r *rand.Rand) map[string]any {
	s := map[string]any{}
	if maybe(r, 2) {
		s["matchLabels"] = map[string]any{"app": pick(r, []string{"a", "b"}), "tier": "x"}
	}
	if maybe(r, 2) {
		s["matchExpressions"] = []any{map[string]any{"key": "k", "operator": pick(r, []string{"In", "NotIn"}), "values": []any{"v1", "v2"}},
			map[string]any{"key": "e", "operator": "Exists"}}
	}
	return s
}

func nodeSelectorTerm(r *rand.Rand) map[string]any {
	t := map[string]any{"matchExpressions": []any{map[string]any{"key": "kubernetes.io/os", "operator": "In", "values": []any{"linux"}}}}
	if maybe(r, 3) {
		t["matchFields"] = []any{map[string]any{"key": "metadata.name", "operator": "In", "values": []any{"node-a"}}}
	}
	return t
}

func podAffinityTerm(r *rand.Rand) map[string]any {
	t := map[string]any{"labelSelector": labelSelector(r), "topologyKey": pick(r, []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"})}
	if maybe(r, 3) {
		t["namespaces"] = []any{"a", "b"}
	}
	if maybe(r, 4) {
		t["namespaceSelector"] = map[string]any{}
	}
	return t
}

func affinity(r *rand.Rand) map[string]any {
	a := map[string]any{}
	if maybe(r, 2) {
		na := map[string]any{}
		if maybe(r, 2) {
			na["requiredDuringSchedulingIgnoredDuringExecution"] = map[string]any{"nodeSelectorTerms": []any{nodeSelectorTerm(r)}}
		}
		if maybe(r, 2) {
			na["preferredDuringSchedulingIgnoredDuringExecution"] = []any{map[string]any{"weight": 1 + r.IntN(100), "preference": nodeSelectorTerm(r)}}
		}
		a["nodeAffinity"] = na
	}
	for _, k := range []string{"podAffinity", "podAntiAffinity"} {
		if maybe(r, 3) {
			pa := map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{podAffinityTerm(r)}}
			if maybe(r, 2) {
				pa["preferredDuringSchedulingIgnoredDuringExecution"] = []any{map[string]any{"weight": 1 + r.IntN(100), "podAffinityTerm": podAffinityTerm(r)}}
			}
			a[k] = pa
		}
	}
	return a
}

func handler(r *rand.Rand, probe bool) map[string]any {
	switch r.IntN(5) {
	case 0:
		return map[string]any{"exec": map[string]any{"command": []any{"cat", "/tmp/ok"}}}
	case 1:
		h := map[string]any{"port": pick(r, []any{8080, "http", 80})}
		if maybe(r, 2) {
			h["path"] = "/healthz"
		}
		if maybe(r, 3) {
			h["scheme"] = pick(r, []string{"HTTP", "HTTPS"})
		}
		if maybe(r, 3) {
			h["httpHeaders"] = []any{map[string]any{"name": "X-A", "value": "b"}}
		}
		if maybe(r, 4) {
			h["host"] = "127.0.0.1"
		}
		return map[string]any{"httpGet": h}
	case 2:
		return map[string]any{"tcpSocket": map[string]any{"port": pick(r, []any{8080, "http"})}}
	case 3:
		if probe {
			g := map[string]any{"port": 9000}
			if maybe(r, 2) {
				g["service"] = "health"
			}
			return map[string]any{"grpc": g}
		}
		return map[string]any{"sleep": map[string]any{"seconds": r.IntN(10)}}
	default:
		return map[string]any{"exec": map[string]any{"command": []any{"true"}}}
	}
}

func probe(r *rand.Rand) map[string]any {
	p := handler(r, true)
	for _, k := range []string{"initialDelaySeconds", "timeoutSeconds", "periodSeconds", "failureThreshold"} {
		if maybe(r, 3) {
			p[k] = 1 + r.IntN(20)
		}
	}
	if maybe(r, 5) {
		p["successThreshold"] = 1
	}
	if maybe(r, 5) {
		p["terminationGracePeriodSeconds"] = 1 + r.IntN(30)
	}
	return p
}

func containerSecurityContext(r *rand.Rand) map[string]any {
	sc := map[string]any{}
	if maybe(r, 2) {
		sc["runAsUser"] = r.IntN(2000)
	}
	if maybe(r, 3) {
		sc["runAsGroup"] = r.IntN(2000)
	}
	if maybe(r, 3) {
		sc["runAsNonRoot"] = r.IntN(2) == 0
	}
	if maybe(r, 3) {
		sc["readOnlyRootFilesystem"] = true
	}
	if maybe(r, 3) {
		sc["allowPrivilegeEscalation"] = false
	}
	if maybe(r, 4) {
		sc["privileged"] = r.IntN(2) == 0
	}
	if maybe(r, 3) {
		sc["capabilities"] = map[string]any{"add": []any{"NET_ADMIN"}, "drop": []any{"ALL"}}
	}
	if maybe(r, 3) {
		sc["seccompProfile"] = pick(r, []any{map[string]any{"type": "RuntimeDefault"}, map[string]any{"type": "Localhost", "localhostProfile": "p.json"}})
	}
	if maybe(r, 4) {
		sc["seLinuxOptions"] = map[string]any{"level": "s0:c1,c2", "type": "spc_t"}
	}
	if maybe(r, 4) {
		sc["appArmorProfile"] = map[string]any{"type": "RuntimeDefault"}
	}
	if maybe(r, 5) {
		sc["procMount"] = "Default"
	}
	return sc
}

func podSecurityContext(r *rand.Rand, safe bool) map[string]any {
	sc := map[string]any{}
	if maybe(r, 2) {
		sc["fsGroup"] = r.IntN(3000)
	}
	if maybe(r, 3) {
		sc["runAsUser"] = r.IntN(2000)
	}
	if maybe(r, 3) {
		sc["runAsNonRoot"] = true
	}
	if maybe(r, 3) {
		sc["supplementalGroups"] = []any{r.IntN(100), 1000}
	}
	if maybe(r, 4) {
		sc["supplementalGroupsPolicy"] = pick(r, []string{"Merge", "Strict"})
	}
	if !safe && maybe(r, 3) {
		sc["sysctls"] = []any{map[string]any{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}}
	}
	if maybe(r, 3) {
		sc["seccompProfile"] = map[string]any{"type": "RuntimeDefault"}
	}
	if maybe(r, 4) {
		sc["fsGroupChangePolicy"] = pick(r, []string{"OnRootMismatch", "Always"})
	}
	if maybe(r, 5) {
		sc["seLinuxChangePolicy"] = "MountOption"
	}
	return sc
}

func richContainer(r *rand.Rand, name string, safe bool, volumes []string) map[string]any {
	c := map[string]any{"name": name, "image": pick(r, []string{"nginx", "nginx:latest", "busybox:1.36", "registry.k8s.io/pause:3.10", "r.io/a@sha256:" + fmt.Sprintf("%064x", r.Uint64())})}
	if maybe(r, 3) {
		c["imagePullPolicy"] = pick(r, []string{"Always", "IfNotPresent", "Never"})
	}
	if maybe(r, 2) {
		c["command"] = []any{"sh", "-c"}
		c["args"] = []any{"sleep 3600"}
	}
	if maybe(r, 4) {
		c["workingDir"] = "/work"
	}
	if maybe(r, 2) {
		res := map[string]any{}
		if maybe(r, 2) {
			res["requests"] = resourceList(r, safe, "cpu", "memory", "ephemeral-storage")
		}
		if maybe(r, 2) {
			if safe {
				res["limits"] = resourceList(r, safe, "cpu", "memory")
			} else {
				res["limits"] = resourceList(r, safe, "cpu", "memory", "hugepages-2Mi", "example.com/dev")
			}
		}
		if !safe && maybe(r, 4) {
			res["claims"] = []any{map[string]any{"name": "gpu"}}
		}
		c["resources"] = res
	}
	if maybe(r, 4) {
		policy := pick(r, []string{"NotRequired", "RestartContainer"})
		if safe {
			policy = "NotRequired"
		}
		c["resizePolicy"] = []any{map[string]any{"resourceName": "cpu", "restartPolicy": policy}}
	}
	if maybe(r, 3) {
		p := map[string]any{"containerPort": 8000 + r.IntN(100), "name": "http"}
		if maybe(r, 2) {
			p["protocol"] = pick(r, []string{"TCP", "UDP", "SCTP"})
		}
		if maybe(r, 3) {
			p["hostPort"] = p["containerPort"]
		}
		c["ports"] = []any{p}
	}
	for _, k := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
		if maybe(r, 3) {
			c[k] = probe(r)
			if safe && k == "readinessProbe" {
				delete(c[k].(map[string]any), "terminationGracePeriodSeconds")
			}
		}
	}
	if maybe(r, 4) {
		l := map[string]any{}
		if maybe(r, 2) {
			l["postStart"] = handler(r, false)
		}
		if maybe(r, 2) {
			l["preStop"] = handler(r, false)
		}
		// Not in safe pods: staticpods accepts a stopSignal (ContainerStopSignals
		// is off) that kubelet's static pod validation refuses without
		// spec.os.name; a known difference left to the validation package.
		if !safe && maybe(r, 4) {
			l["stopSignal"] = "SIGTERM"
		}
		c["lifecycle"] = l
	}
	if maybe(r, 2) {
		env := []any{map[string]any{"name": "A", "value": "b"}, map[string]any{"name": "EMPTY"}}
		if maybe(r, 2) {
			env = append(env, map[string]any{"name": "NODE", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "spec.nodeName"}}})
		}
		if maybe(r, 2) {
			rf := map[string]any{"resource": "limits.memory"}
			if maybe(r, 2) {
				rf["divisor"] = pick(r, []any{"1Mi", "1", "1k", 1})
				if !safe {
					rf["divisor"] = pick(r, []any{"1Mi", "1", "1m", 1})
				}
			}
			env = append(env, map[string]any{"name": "MEM", "valueFrom": map[string]any{"resourceFieldRef": rf}})
		}
		if !safe && maybe(r, 3) {
			env = append(env, map[string]any{"name": "S", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k", "optional": true}}})
		}
		c["env"] = env
	}
	if !safe && maybe(r, 5) {
		c["envFrom"] = []any{map[string]any{"prefix": "P_", "configMapRef": map[string]any{"name": "cm"}}}
	}
	if len(volumes) > 0 && maybe(r, 2) {
		var mounts []any
		for i, v := range volumes {
			if maybe(r, 2) {
				m := map[string]any{"name": v, "mountPath": fmt.Sprintf("/mnt/%d", i)}
				if maybe(r, 3) {
					m["readOnly"] = true
				}
				if maybe(r, 4) {
					m["subPath"] = "sub"
				}
				if maybe(r, 5) {
					m["mountPropagation"] = pick(r, []string{"None", "HostToContainer"})
				}
				mounts = append(mounts, m)
			}
		}
		if mounts != nil {
			c["volumeMounts"] = mounts
		}
	}
	if maybe(r, 3) {
		c["securityContext"] = containerSecurityContext(r)
	}
	if maybe(r, 5) {
		c["stdin"] = true
		c["tty"] = true
	}
	if maybe(r, 5) {
		c["terminationMessagePolicy"] = "FallbackToLogsOnError"
	}
	if maybe(r, 6) {
		c["terminationMessagePath"] = "/dev/term"
	}
	return c
}

// richVolume returns a volume named name of a random kind (API-free ones
// only when safe).
func richVolume(r *rand.Rand, name string, safe bool) map[string]any {
	v := map[string]any{"name": name}
	kinds := []string{"hostPath", "emptyDir", "emptyDirSized", "downwardAPI", "nfs", "iscsi", "image", "projectedDownward", "none", "fc"}
	if !safe {
		kinds = append(kinds, "secret", "configMap", "pvc", "projected", "csi", "ephemeral", "rbd", "cephfs", "azureDisk", "gitRepo")
	}
	switch pick(r, kinds) {
	case "hostPath":
		h := map[string]any{"path": pick(r, []string{"/etc/kubernetes", "/var/lib/x", "/run"})}
		if maybe(r, 2) {
			h["type"] = pick(r, []string{"DirectoryOrCreate", "Directory", "FileOrCreate", ""})
		}
		v["hostPath"] = h
	case "emptyDir":
		v["emptyDir"] = map[string]any{}
	case "emptyDirSized":
		v["emptyDir"] = map[string]any{"medium": pick(r, []string{"", "Memory"}), "sizeLimit": quantity(r, safe)}
	case "downwardAPI":
		d := map[string]any{"items": []any{map[string]any{"path": "labels", "fieldRef": map[string]any{"fieldPath": "metadata.labels"}},
			map[string]any{"path": "cpu", "resourceFieldRef": map[string]any{"containerName": "c0", "resource": "requests.cpu", "divisor": pick(r, []any{"1m", "1", 1})}}}}
		if maybe(r, 2) {
			d["defaultMode"] = 0o600
		}
		v["downwardAPI"] = d
	case "nfs":
		v["nfs"] = map[string]any{"server": "10.0.0.1", "path": "/exports", "readOnly": maybe(r, 2)}
	case "iscsi":
		v["iscsi"] = map[string]any{"targetPortal": "10.0.0.2:3260", "iqn": "iqn.2001-04.com.example:storage", "lun": r.IntN(4), "fsType": "ext4"}
	case "image":
		v["image"] = map[string]any{"reference": "registry.k8s.io/pause:3.10", "pullPolicy": pick(r, []string{"", "IfNotPresent"})}
	case "projectedDownward":
		v["projected"] = map[string]any{"sources": []any{map[string]any{"downwardAPI": map[string]any{"items": []any{map[string]any{"path": "n", "fieldRef": map[string]any{"fieldPath": "metadata.name"}}}}}}}
	case "none":
	case "fc":
		v["fc"] = map[string]any{"targetWWNs": []any{"500a0982991b8dc5"}, "lun": 2, "fsType": "ext4"}
	case "secret":
		v["secret"] = map[string]any{"secretName": "s", "items": []any{map[string]any{"key": "k", "path": "p", "mode": 0o400}}}
	case "configMap":
		v["configMap"] = map[string]any{"name": "cm", "optional": true}
	case "pvc":
		v["persistentVolumeClaim"] = map[string]any{"claimName": "c", "readOnly": true}
	case "projected":
		v["projected"] = map[string]any{"defaultMode": 0o440, "sources": []any{
			map[string]any{"serviceAccountToken": map[string]any{"audience": "a", "path": "token"}},
			map[string]any{"configMap": map[string]any{"name": "cm"}},
			map[string]any{"clusterTrustBundle": map[string]any{"signerName": "example.com/s", "path": "b.pem", "labelSelector": map[string]any{}}},
		}}
	case "csi":
		v["csi"] = map[string]any{"driver": "csi.example.com", "volumeAttributes": map[string]any{"size": "1Gi"}, "nodePublishSecretRef": map[string]any{"name": "s"}}
	case "ephemeral":
		v["ephemeral"] = map[string]any{"volumeClaimTemplate": map[string]any{"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"},
			"resources": map[string]any{"requests": map[string]any{"storage": quantity(r, safe)}}}}}
	case "rbd":
		v["rbd"] = map[string]any{"monitors": []any{"10.0.0.3:6789"}, "image": "img"}
	case "cephfs":
		v["cephfs"] = map[string]any{"monitors": []any{"10.0.0.3:6789"}}
	case "azureDisk":
		v["azureDisk"] = map[string]any{"diskName": "d", "diskURI": "https://x/d.vhd"}
	case "gitRepo":
		v["gitRepo"] = map[string]any{"repository": "https://example.com/r.git"}
	}
	return v
}

// richStaticPod is a random manifest; safe keeps it to what kubelet's
// sources accept (mostly: a few are still refused by validation).
func richStaticPod(r *rand.Rand, i int, safe bool) map[string]any {
	meta := map[string]any{"name": fmt.Sprintf("rich-%d", i)}
	if maybe(r, 2) {
		meta["namespace"] = pick(r, []string{"kube-system", "default", "other"})
	}
	if maybe(r, 2) {
		meta["labels"] = map[string]any{"tier": "control-plane", "component": fmt.Sprintf("c%d", r.IntN(4)), "z": "", "a.b/c": "d"}
	}
	if maybe(r, 2) {
		meta["annotations"] = map[string]any{"example.com/a": fmt.Sprint(r.IntN(9)), "kubernetes.io/config.hash": "ignored?"}
	}
	if maybe(r, 6) {
		meta["creationTimestamp"] = pick(r, []string{"2026-01-02T03:04:05Z", "2026-01-02T03:04:05+02:00"})
	}
	if maybe(r, 8) {
		meta["generateName"] = "gen-"
	}
	if maybe(r, 8) {
		meta["finalizers"] = []any{"example.com/f"}
	}
	if maybe(r, 10) {
		meta["uid"] = fmt.Sprintf("fixed-uid-%d", i)
	}
	spec := map[string]any{}
	var volumes []string
	if maybe(r, 2) {
		var vs []any
		for j := range 1 + r.IntN(4) {
			name := fmt.Sprintf("v%d", j)
			vs = append(vs, richVolume(r, name, safe))
			volumes = append(volumes, name)
		}
		spec["volumes"] = vs
	}
	var cs []any
	for j := range 1 + r.IntN(3) {
		cs = append(cs, richContainer(r, fmt.Sprintf("c%d", j), safe, volumes))
	}
	spec["containers"] = cs
	if maybe(r, 3) {
		var ics []any
		for j := range 1 + r.IntN(2) {
			ic := richContainer(r, fmt.Sprintf("i%d", j), safe, volumes)
			delete(ic, "livenessProbe")
			delete(ic, "readinessProbe")
			delete(ic, "startupProbe")
			delete(ic, "lifecycle")
			if maybe(r, 2) {
				ic["restartPolicy"] = "Always" // a sidecar
			}
			ics = append(ics, ic)
		}
		spec["initContainers"] = ics
	}
	if maybe(r, 3) {
		spec["hostNetwork"] = true
	}
	if !safe && maybe(r, 6) {
		spec["hostPID"] = true
	}
	if maybe(r, 6) {
		spec["hostIPC"] = true
	}
	if maybe(r, 6) {
		spec["shareProcessNamespace"] = true
	}
	if !safe && maybe(r, 8) {
		spec["hostUsers"] = maybe(r, 2)
	}
	if maybe(r, 3) {
		spec["priorityClassName"] = "system-node-critical"
		spec["priority"] = 2000001000
	}
	if maybe(r, 5) {
		spec["preemptionPolicy"] = pick(r, []string{"Never", "PreemptLowerPriority"})
	}
	if maybe(r, 3) {
		spec["securityContext"] = podSecurityContext(r, safe)
	}
	if maybe(r, 3) {
		spec["affinity"] = affinity(r)
	}
	if maybe(r, 2) {
		tol := []any{map[string]any{"operator": "Exists", "effect": "NoExecute"}}
		if maybe(r, 2) {
			tol = []any{map[string]any{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5},
				map[string]any{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
				map[string]any{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}}
		}
		spec["tolerations"] = tol
	}
	if maybe(r, 3) {
		tsc := map[string]any{"maxSkew": 1 + r.IntN(3), "topologyKey": "topology.kubernetes.io/zone",
			"whenUnsatisfiable": pick(r, []string{"DoNotSchedule", "ScheduleAnyway"}), "labelSelector": labelSelector(r)}
		if maybe(r, 3) {
			tsc["nodeAffinityPolicy"] = pick(r, []string{"Honor", "Ignore"})
			tsc["nodeTaintsPolicy"] = pick(r, []string{"Honor", "Ignore"})
		}
		if maybe(r, 3) {
			tsc["matchLabelKeys"] = []any{"pod-template-hash"}
		}
		if tsc["whenUnsatisfiable"] == "DoNotSchedule" && maybe(r, 3) {
			tsc["minDomains"] = 2
		}
		spec["topologySpreadConstraints"] = []any{tsc}
	}
	if !safe && maybe(r, 3) {
		spec["resourceClaims"] = []any{map[string]any{"name": "gpu", "resourceClaimName": "claim"},
			map[string]any{"name": "other", "resourceClaimTemplateName": "tmpl"}}
	}
	if maybe(r, 3) {
		spec["os"] = map[string]any{"name": "linux"}
	}
	// Refused by both sources (a static pod is bound to its node).
	if !safe && maybe(r, 4) {
		spec["schedulingGates"] = []any{map[string]any{"name": "example.com/gate"}}
	}
	if maybe(r, 3) {
		spec["nodeSelector"] = map[string]any{"kubernetes.io/os": "linux", "b": "c"}
	}
	if maybe(r, 4) {
		spec["dnsPolicy"] = pick(r, []string{"ClusterFirstWithHostNet", "Default", "None"})
		if spec["dnsPolicy"] == "None" || maybe(r, 2) {
			spec["dnsConfig"] = map[string]any{"nameservers": []any{"1.1.1.1"}, "searches": []any{"a.local"},
				"options": []any{map[string]any{"name": "ndots", "value": "2"}, map[string]any{"name": "edns0"}}}
		}
	}
	if maybe(r, 4) {
		spec["hostAliases"] = []any{map[string]any{"ip": "10.1.2.3", "hostnames": []any{"foo", "bar"}}}
	}
	if maybe(r, 4) {
		spec["restartPolicy"] = pick(r, []string{"Always", "OnFailure", "Never"})
	}
	if maybe(r, 4) {
		spec["terminationGracePeriodSeconds"] = pick(r, []int{0, 1, 30, -5})
	}
	if maybe(r, 5) {
		spec["activeDeadlineSeconds"] = 1 + r.IntN(1000)
	}
	if maybe(r, 5) {
		spec["hostname"] = "h"
		spec["subdomain"] = "s"
	}
	if maybe(r, 5) {
		spec["setHostnameAsFQDN"] = maybe(r, 2)
	}
	if maybe(r, 5) {
		spec["enableServiceLinks"] = false
	}
	if maybe(r, 5) {
		spec["readinessGates"] = []any{map[string]any{"conditionType": "example.com/ready"}}
	}
	if maybe(r, 6) {
		spec["runtimeClassName"] = "runc"
	}
	if maybe(r, 6) {
		spec["schedulerName"] = "my-scheduler"
	}
	if maybe(r, 6) {
		spec["automountServiceAccountToken"] = false
	}
	if maybe(r, 5) {
		requests, limits := resourceList(r, safe, "cpu", "memory"), resourceList(r, safe, "cpu", "memory")
		if safe {
			// A pod-level limit without its request: validation.Pod judges
			// the request the API server's defaulting would set (the
			// containers' aggregate) against the limit, where kubelet,
			// which never defaults a static pod's, keeps the pod (a
			// difference staticpods' doc names). The sources' comparison
			// writes the request.
			for name, q := range limits {
				if _, ok := requests[name]; !ok {
					requests[name] = q
				}
			}
		}
		spec["resources"] = map[string]any{"requests": requests, "limits": limits}
	}
	if !safe && maybe(r, 5) {
		spec["serviceAccountName"] = "sa"
	}
	if !safe && maybe(r, 5) {
		spec["serviceAccount"] = "old-sa"
	}
	if !safe && maybe(r, 6) {
		spec["imagePullSecrets"] = []any{map[string]any{"name": "pull"}}
	}
	if !safe && maybe(r, 6) {
		spec["overhead"] = resourceList(r, safe, "cpu", "memory")
	}
	m := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
	if maybe(r, 6) {
		st := map[string]any{"phase": pick(r, []string{"Running", "Pending", "Failed"})}
		if maybe(r, 2) {
			st["podIP"] = "10.0.0.9"
		}
		if maybe(r, 2) {
			st["podIPs"] = []any{map[string]any{"ip": "10.0.0.8"}}
		}
		if maybe(r, 2) {
			st["conditions"] = []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-02T03:04:05Z"}}
		}
		if maybe(r, 3) {
			st["qosClass"] = "BestEffort"
		}
		m["status"] = st
	}
	return m
}
