package traffic

import (
	"errors"
	"os"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// FuzzParseSnapshot feeds arbitrary bytes to the snapshot parser and what it accepts to Resolve:
// never a panic, and every refusal is a file fault naming the file.
func FuzzParseSnapshot(f *testing.F) {
	for _, seed := range []string{
		`{"status":"success","data":{"resultType":"vector","result":[]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"meshscope_metric":"istio_requests_total","meshscope_window":"7d","reporter":"source","source_workload":"web","source_workload_namespace":"shop","destination_service":"payments.pay:9090","destination_service_name":"PassthroughCluster","request_protocol":"http","destination_port":"80"},"value":[1,"2"]}]}}`,
		`[{"metric":{"meshscope_metric":"istio_tcp_connections_opened_total","meshscope_window":"1h","reporter":"destination","source_workload":"web","source_workload_namespace":"shop","destination_service":"cart.shop.svc.cluster.local"},"value":[1,"NaN"]}]`,
		`{"status":"error","errorType":"bad_data","error":"x"}`,
		"{\n\"status\": \"success\",\n",
	} {
		f.Add([]byte(seed))
	}
	if data, err := os.ReadFile("testdata/observed.json"); err == nil {
		f.Add(data)
	}
	inv := mesh.New()
	if err := inv.AddYAML("inventory.yaml", []byte(inventoryYAML)); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := ParseSnapshot("observed.json", data)
		if err != nil {
			var fault *Fault
			if !errors.As(err, &fault) || fault.Kind != FaultFile || fault.Where != "observed.json" {
				t.Fatalf("error %v is not a file fault naming the file", err)
			}
			return
		}
		ev := Resolve(snap, inv, "cluster.local")
		for _, k := range ev.Workloads() {
			for _, c := range ev.Calls(k[:indexSlash(k)], k[indexSlash(k)+1:]) {
				if c.Count < 0 {
					t.Fatalf("negative count %v", c.Count)
				}
			}
		}
		_ = Dependencies(ev.Calls("shop", "web"))
	})
}

func indexSlash(s string) int {
	for i := range s {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}
