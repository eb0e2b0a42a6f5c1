package bench

import (
	"runtime"
	"slices"
	"sync"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
)

// Stats summarise a per-proxy count.
type Stats struct {
	Mean     float64
	P50, Max int
}

// Summarise returns the mean, median (lower middle) and max of xs.
func Summarise(xs []int) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0
	for _, x := range s {
		sum += x
	}
	return Stats{Mean: float64(sum) / float64(len(s)), P50: s[(len(s)-1)/2], Max: s[len(s)-1]}
}

// Counts predicts every proxy on the inventory and returns the CDS cluster
// counts, in proxy order, using every CPU.
func Counts(inv *mesh.Inventory, proxies []Proxy) ([]int, error) {
	p, err := predict.New(inv, predict.Options{})
	if err != nil {
		return nil, err
	}
	out := make([]int, len(proxies))
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(proxies); i += workers {
				px := proxies[i]
				out[i] = len(p.Predict(predict.Proxy{Namespace: px.Namespace, Labels: px.Labels}).Clusters)
			}
		}()
	}
	wg.Wait()
	return out, nil
}

// FloorRow is one line of the scope-floor table.
type FloorRow struct {
	Services int
	Proxies  int
	Policy   Policy
	Stats    Stats
	// AtFloor counts the proxies whose count equals the floor.
	AtFloor int
	// Floor are the floor's own statistics.
	Floor Stats
}

// FloorRows predicts every proxy of the mesh under each policy. base is the
// inventory without Sidecars, sidecars the policy's Sidecar YAML.
func FloorRows(m *Mesh, base *mesh.Inventory, sidecars map[Policy][]byte) ([]FloorRow, error) {
	floor := make([]int, len(m.Proxies))
	for i, px := range m.Proxies {
		floor[i] = m.Floor(px)
	}
	fs := Summarise(floor)
	var rows []FloorRow
	for _, pol := range Policies {
		inv := base
		if y := sidecars[pol]; len(y) > 0 {
			inv = base.Clone()
			if err := inv.AddYAML(string(pol), y); err != nil {
				return nil, err
			}
		}
		counts, err := Counts(inv, m.Proxies)
		if err != nil {
			return nil, err
		}
		at := 0
		for i := range counts {
			if counts[i] == floor[i] {
				at++
			}
		}
		rows = append(rows, FloorRow{Services: m.Spec.Services, Proxies: len(m.Proxies), Policy: pol, Stats: Summarise(counts), AtFloor: at, Floor: fs})
	}
	return rows, nil
}
