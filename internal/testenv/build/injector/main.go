// Command injector writes the `config` and `values` of the istio-sidecar-injector
// ConfigMap that istioctl renders for the default install into a directory, as the files istiod
// reads its injection templates from (var/lib/istio/inject/config and values under its working
// directory): the test control plane's istiod then serves injection.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"istio.io/istio/operator/pkg/render"
	"istio.io/istio/operator/pkg/util/clog"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: injector DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "injector:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	sets, _, err := render.GenerateManifest(nil, nil, false, nil, clog.NewDefaultLogger())
	if err != nil {
		return err
	}
	for _, s := range sets {
		for _, m := range s.Manifests {
			if m.GetKind() != "ConfigMap" || !strings.HasPrefix(m.GetName(), "istio-sidecar-injector") {
				continue
			}
			var cm corev1.ConfigMap
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m.Object, &cm); err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			for _, k := range []string{"config", "values"} {
				if err := os.WriteFile(filepath.Join(dir, k), []byte(cm.Data[k]), 0o644); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return fmt.Errorf("istioctl rendered no istio-sidecar-injector ConfigMap")
}
