package conformance

import (
	_ "istio.io/istio/pilot/pkg/config/kube/crd"
	_ "istio.io/istio/pilot/pkg/model"
	_ "istio.io/istio/pilot/test/xds"
	_ "istio.io/istio/pkg/config/mesh"
	_ "istio.io/istio/pkg/config/validation"
)
