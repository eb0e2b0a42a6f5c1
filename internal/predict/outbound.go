package predict

// Outbound returns the proxy's outbound clusters, sorted by name, without building its whole
// cluster list: what a check of the proxy's destinations needs. Proxies of a scope without
// workload-selected DestinationRules share the slice, which must not be changed.
func (p *Predictor) Outbound(proxy Proxy) []Cluster {
	return p.predict(proxy, false).outbound
}
