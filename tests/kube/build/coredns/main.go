// Command coredns is CoreDNS built from the Go module at the version go.mod
// pins, for tests/e2e/with-kube.sh's node: with only the plugins that node's
// Corefile uses (kubernetes, bind, health, ready, errors, log). Nothing that
// forwards a query (forward, grpc, …) is compiled in, so no Corefile can make
// it ask a server outside the machine.
package main

import (
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"

	"github.com/coredns/coredns/coremain"
)

func main() { coremain.Run() }
