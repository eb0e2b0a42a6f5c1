package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
)

// TestAccLiveInventory_InvalidObjectNamesIt plans against an API server that
// holds a ServiceEntry Istio's validation rejects (written where no webhook
// runs): the plan fails with an error that names the object and what is wrong
// with it and says to fix or delete it, not with "Cluster Unreachable".
func TestAccLiveInventory_InvalidObjectNamesIt(t *testing.T) {
	c := testenv.Connect(t)
	ns := c.UniqueNamespace(t, "invalid", nil)
	c.ApplyInvalidServiceEntry(t, ns, "bad-host")
	cfg := fmt.Sprintf("provider \"meshscope\" {\n  kubernetes {\n    config_path = %q\n  }\n}\n"+
		"data \"meshscope_proxy_clusters\" \"p\" {\n  namespace = %q\n  labels    = { app = \"a\" }\n}\n", c.Env.Kubeconfig, ns)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: cfg,
			ExpectError: regexp.MustCompile(`(?s)Invalid Object In The Cluster.*ServiceEntry\s+` + regexp.QuoteMeta(ns+"/bad-host") +
				`.*` + regexp.QuoteMeta(testenv.InvalidHost) + `.*Fix\s+or\s+delete\s+that\s+object`),
		}},
	})
}
