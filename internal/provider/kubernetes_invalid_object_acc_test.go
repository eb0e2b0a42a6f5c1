package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshscope/terraform-provider-meshscope/internal/kube"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
)

// TestAccLiveInventory_InvalidObjectNamesIt plans against an API server that
// holds a ServiceEntry Istio's validation rejects (written where no webhook
// runs): the plan fails with an error that names the object and what is wrong
// with it and says to fix or delete it, not with "Cluster Unreachable".
func TestAccLiveInventory_InvalidObjectNamesIt(t *testing.T) {
	c := testenv.Connect(t)
	ns := c.UniqueNamespace(t, "invalid", nil)
	c.ApplyYAML(t, "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: bad-host}\n"+
		"spec: {hosts: [\"not a host!!\"], ports: [{number: 80, name: http, protocol: HTTP}], resolution: DNS}\n", testenv.InNamespace(ns))
	// Every other live test reads the whole cluster: the bad entry goes first, whatever happens.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Dynamic.Resource(kube.ServiceEntryGVR).Namespace(ns).Delete(ctx, "bad-host", metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting %s/bad-host: %v", ns, err)
		}
	})
	cfg := fmt.Sprintf("provider \"meshscope\" {\n  kubernetes {\n    config_path = %q\n  }\n}\n"+
		"data \"meshscope_proxy_clusters\" \"p\" {\n  namespace = %q\n  labels    = { app = \"a\" }\n}\n", c.Env.Kubeconfig, ns)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: cfg,
			ExpectError: regexp.MustCompile(`(?s)Invalid Object In The Cluster.*ServiceEntry\s+` + regexp.QuoteMeta(ns+"/bad-host") +
				`.*not a host!!.*Fix\s+or\s+delete\s+that\s+object`),
		}},
	})
}
