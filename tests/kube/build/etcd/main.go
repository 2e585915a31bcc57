// Command etcd is etcd's server, built from the Go module at the version
// go.mod pins, for tests/e2e/with-kube.sh.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
