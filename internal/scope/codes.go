package scope

import "github.com/meshscope/terraform-provider-meshscope/internal/problem"

// The compiler's problem codes (MS1xxx). A caller matches Problem.Code, never the summary or
// the detail; CODES.md at the top of the repository catalogues them.
var (
	CodeInvalidNamespace          = define("MS1001", problem.Error, "Invalid Namespace", "The scope's namespace is not a valid Kubernetes namespace name.")
	CodeUnknownNamespace          = define("MS1002", problem.Error, "Unknown Namespace", "The scope's namespace, or the namespace of an `ns/*` dependency, is not in the inventory. The surface says how to add its manifests.")
	CodeInvalidLabelKey           = define("MS1003", problem.Error, "Invalid Label Key", "A workload_selector key is not a valid Kubernetes label key.")
	CodeInvalidLabelValue         = define("MS1004", problem.Error, "Invalid Label Value", "A workload_selector value is not a valid Kubernetes label value.")
	CodeInvalidName               = define("MS1005", problem.Error, "Invalid Name", "The Sidecar name is not a valid Kubernetes object name.")
	CodeInvalidOutboundPolicy     = define("MS1006", problem.Error, "Invalid Outbound Traffic Policy", "The outbound traffic policy is not ALLOW_ANY or REGISTRY_ONLY.")
	CodeInvalidIngressPort        = define("MS1007", problem.Error, "Invalid Ingress Port", "An ingress port is not between 1 and 65535.")
	CodeInvalidIngressProtocol    = define("MS1008", problem.Error, "Invalid Ingress Protocol", "An ingress protocol is not one Istio accepts on a Sidecar listener.")
	CodeInvalidDefaultEndpoint    = define("MS1009", problem.Error, "Invalid Default Endpoint", "An ingress default_endpoint is not a loopback or wildcard address with a port, or a unix socket.")
	CodeMalformedHost             = define("MS1010", problem.Error, "Malformed Host", "A dependency, or a system host, is not a host Istio's Sidecar egress accepts.")
	CodeUnknownService            = define("MS1011", problem.Error, "Unknown Service", "A dependency matches no Kubernetes Service and no ServiceEntry host of the inventory. The surface says how to add its manifests.")
	CodeServiceNotVisible         = define("MS1012", problem.Error, "Service Not Visible", "A dependency's Service is outside the mesh's discoverySelectors, or not exported to the scope's namespace: no scope of that namespace can route to it.")
	CodePortNotExposed            = define("MS1013", problem.Error, "Port Not Exposed", "A dependency declares a port its Service or ServiceEntry does not expose (or exposes only as UDP).")
	CodeNamespacePortNotExposed   = define("MS1014", problem.Warning, "Port Not Exposed", "An `ns/*` dependency declares a port no service of the namespace exposes, so the port imports nothing.")
	CodeSystemHostsMissing        = define("MS1015", problem.Warning, "System Hosts Missing", "The scope imports no service of the mesh root namespace, which proxies reach istiod, telemetry and tracing through.")
	CodeExternalHostNotInRegistry = define("MS1016", problem.Warning, "External Host Not In Registry", "Under REGISTRY_ONLY, a dependency is an ExternalName alias no ServiceEntry covers: its calls are blocked.")
	CodeDependencyWidensEveryPort = define("MS1017", problem.Warning, "Dependency Widens Every Port", "A dependency imports every port while others list theirs: a Sidecar narrows by port only when every dependency does.")
	CodePortListenerIsTCP         = define("MS1018", problem.Warning, "Port Listener Is TCP", "A dependency's HTTP or detected port shares its port listener with a TCP dependency, so its calls are proxied as TCP.")
	CodeCannotRenderSidecar       = define("MS1019", problem.Error, "Cannot Render Sidecar", "The Sidecar could not be marshalled; a defect to report.")
	CodeExclusionNotSupported     = define("MS1020", problem.Error, "Exclusion Not Supported", "A system host uses a `~` exclusion, which the target Istio release does not understand.")
	CodeConflictingDefault        = define("MS1021", problem.Error, "Conflicting Namespace Default Sidecar", "The namespace already has another selector-less Sidecar; Istio applies only the oldest (IST0111).")
	CodeConflictingSelection      = define("MS1022", problem.Error, "Conflicting Sidecar Selection", "A workload is selected by this scope and by another Sidecar; Istio applies only the oldest (IST0110).")
	CodeEgressHostNotImportable   = define("MS1023", problem.Error, "Egress Host Not Importable", "An existing Sidecar's egress host has no dependency form, so the Sidecar cannot be imported as declarations.")
)

func define(code problem.Code, level problem.Level, summary, meaning string) problem.Code {
	return problem.Define(code, level, "scope", summary, meaning)
}

// newProblem is a problem of the given code, with its summary and level from the catalogue.
func newProblem(code problem.Code, attr string, index int, detail string) Problem {
	d, _ := problem.Lookup(code)
	return Problem{Code: code, Attribute: attr, Index: index, Summary: d.Summary, Detail: detail, Warning: d.Level == problem.Warning}
}
