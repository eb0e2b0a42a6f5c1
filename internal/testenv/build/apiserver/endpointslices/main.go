// Command endpointslices runs Kubernetes' own EndpointSlice controller (the one
// kube-controller-manager runs as endpointslice-controller) against the test control plane, for
// the namespaces given only: the testenv's other tests write their slices themselves, and a
// controller over every namespace would add its own beside them.
//
//	endpointslices --kubeconfig PATH --namespace NS [--namespace NS...]
//
// It runs until SIGTERM or SIGINT. Pods need spec.nodeName naming a Node that exists, or the
// controller leaves them out, as in a real cluster.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/kubernetes/pkg/controller/endpointslice"
)

type namespaces []string

func (n *namespaces) String() string     { return strings.Join(*n, ",") }
func (n *namespaces) Set(v string) error { *n = append(*n, v); return nil }

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig of the API server")
	var nss namespaces
	flag.Var(&nss, "namespace", "a namespace whose Services get EndpointSlices (repeatable)")
	flag.Parse()
	if *kubeconfig == "" || len(nss) == 0 {
		fmt.Fprintln(os.Stderr, "usage: endpointslices --kubeconfig PATH --namespace NS [--namespace NS...]")
		os.Exit(2)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "endpointslices:", err)
		os.Exit(1)
	}
	cfg.UserAgent = "endpointslices-testenv"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "endpointslices:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	done := make(chan struct{})
	for _, ns := range nss {
		// kube-controller-manager's defaults: 100 endpoints per slice, no batching, 5 workers.
		f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
		c := endpointslice.NewController(ctx, f.Core().V1().Pods(), f.Core().V1().Services(), f.Core().V1().Nodes(),
			f.Discovery().V1().EndpointSlices(), 100, client, 0)
		f.Start(ctx.Done())
		go func() {
			c.Run(ctx, 5)
			done <- struct{}{}
		}()
	}
	fmt.Fprintf(os.Stderr, "endpointslices: running for %s\n", nss.String())
	for range nss {
		<-done
	}
}
