package apiobjects_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/apiobjects"
)

// Objects holds Secrets and ConfigMaps in memory and answers a missing
// one as the API does.
func ExampleObjects() {
	var objs apiobjects.Objects
	objs.SetConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"},
		Data: map[string]string{"LOG_LEVEL": "debug"}})

	cm, _ := objs.GetConfigMap(context.Background(), "shop", "settings")
	fmt.Println(cm.Data["LOG_LEVEL"])
	_, err := objs.GetSecret(context.Background(), "shop", "db")
	fmt.Println(err, apierrors.IsNotFound(err))
	// Output:
	// debug
	// secret "db" not found true
}
