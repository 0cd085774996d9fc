// etcd as go.etcd.io/etcd/server/v3 builds it (server/main.go), from the module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
