package apiobjects_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/apiobjects"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// Env plugs into a Syncer and resolves a container's references to
// Secrets and ConfigMaps as kubelet does; an optional key that is absent
// leaves its variable out.
func ExampleEnv() {
	var objs apiobjects.Objects // or an adapter over an informer's listers
	objs.SetConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"},
		Data: map[string]string{"LOG_LEVEL": "debug", "REGION": "eu"}})
	objs.SetSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
		Data: map[string][]byte{"password": []byte("s3cr3t")}})

	syncer := podsync.NewSyncer(fake.New(), nil, podsync.WithEnvResolver(apiobjects.Env{Source: &objs}))

	optional := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web"}}
	app := &corev1.Container{Name: "app",
		EnvFrom: []corev1.EnvFromSource{{Prefix: "APP_", ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
		Env: []corev1.EnvVar{
			{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}},
			{Name: "DB_USER", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "user", Optional: &optional}}},
		}}
	env, err := syncer.Environment(context.Background(), pod, app, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range env {
		fmt.Printf("%s=%s\n", e.Name, e.Value)
	}

	app.Env[1].ValueFrom.SecretKeyRef.Optional = nil
	_, err = syncer.Environment(context.Background(), pod, app, nil)
	fmt.Println(err)
	// Output:
	// APP_LOG_LEVEL=debug
	// APP_REGION=eu
	// DB_PASSWORD=s3cr3t
	// couldn't find key user in Secret shop/db
}

// With Services, Env adds the variables kubelet adds for Services: the API
// server's always (what client-go's in-cluster config reads), the pod
// namespace's with enableServiceLinks.
func ExampleEnv_ServiceEnv() {
	var objs apiobjects.Objects
	objs.SetService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}})
	objs.SetService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "redis"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.7.7", Ports: []corev1.ServicePort{{Port: 6379}}}})
	syncer := podsync.NewSyncer(fake.New(), nil, podsync.WithEnvResolver(apiobjects.Env{Source: &objs, Services: &objs}))

	links := false
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web"},
		Spec: corev1.PodSpec{EnableServiceLinks: &links}}
	app := &corev1.Container{Name: "app", Env: []corev1.EnvVar{{Name: "API", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"}}}
	env, err := syncer.Environment(context.Background(), pod, app, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range env {
		fmt.Printf("%s=%s\n", e.Name, e.Value)
	}
	links = true
	env, _ = syncer.Environment(context.Background(), pod, app, nil)
	for _, e := range env {
		if e.Name == "REDIS_SERVICE_HOST" {
			fmt.Printf("with service links: %d variables, %s=%s\n", len(env), e.Name, e.Value)
		}
	}
	// Output:
	// API=https://10.96.0.1:443
	// KUBERNETES_PORT=tcp://10.96.0.1:443
	// KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443
	// KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1
	// KUBERNETES_PORT_443_TCP_PORT=443
	// KUBERNETES_PORT_443_TCP_PROTO=tcp
	// KUBERNETES_SERVICE_HOST=10.96.0.1
	// KUBERNETES_SERVICE_PORT=443
	// KUBERNETES_SERVICE_PORT_HTTPS=443
	// with service links: 16 variables, REDIS_SERVICE_HOST=10.96.7.7
}
