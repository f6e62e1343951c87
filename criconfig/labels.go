package criconfig

// Kubelet's labels and annotations on sandboxes and containers.
const (
	LabelPodName                        = "io.kubernetes.pod.name"
	LabelPodNamespace                   = "io.kubernetes.pod.namespace"
	LabelPodUID                         = "io.kubernetes.pod.uid"
	LabelContainerName                  = "io.kubernetes.container.name"
	AnnotationContainerHash             = "io.kubernetes.container.hash"
	AnnotationContainerRestartCount     = "io.kubernetes.container.restartCount"
	AnnotationTerminationMessagePath    = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMessagePolicy  = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationPodDeletionGracePeriod    = "io.kubernetes.pod.deletionGracePeriod"
	AnnotationPodTerminationGracePeriod = "io.kubernetes.pod.terminationGracePeriod"
	AnnotationContainerPreStopHandler   = "io.kubernetes.container.preStopHandler"
	AnnotationContainerPorts            = "io.kubernetes.container.ports"
)
