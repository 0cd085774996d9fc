// kube-apiserver as k8s.io/kubernetes builds it (cmd/kube-apiserver/apiserver.go), from the module.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
