package predict

import (
	"errors"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Predictor holds the indexes istiod builds in its PushContext for one inventory.
// It is safe for concurrent use after New returns.
type Predictor struct {
	inv  *mesh.Inventory
	opts Options
}

// WorkloadProxy is a workload of the inventory seen as a proxy.
type WorkloadProxy struct {
	Namespace string
	Name      string
	Kind      string
	Labels    map[string]string
}

// New indexes the inventory.
func New(inv *mesh.Inventory, opts Options) (*Predictor, error) {
	return nil, errors.New("not implemented yet")
}

// Predict returns the clusters istiod builds for the proxy.
func (p *Predictor) Predict(proxy Proxy) *Result { return &Result{Proxy: proxy} }

// WorkloadProxies lists every workload of the inventory that istiod can see, sorted by namespace, kind and name.
func (p *Predictor) WorkloadProxies() []WorkloadProxy { return nil }
