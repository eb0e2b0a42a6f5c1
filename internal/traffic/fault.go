package traffic

import (
	"github.com/meshscope/terraform-provider-meshscope/internal/problem"
)

// pkg names this package in the catalogue of problem codes.
const pkg = "traffic"

// The problems of reading evidence. A Fault carries one of the error codes; a Report names
// the warnings. Each surface words its own remedy: the provider names its attributes
// (prometheus.url), the command line its flags (--prometheus).
var (
	CodeUnreachable = problem.Define("MS2001", problem.Error, pkg, "Prometheus Unreachable",
		"Nothing answered at the Prometheus URL (connection refused, no route, DNS). Check the URL and that the server is reachable from where meshscope runs (a port-forward, a proxy).")
	CodeTimeout = problem.Define("MS2002", problem.Error, pkg, "Prometheus Not Answering",
		"Prometheus did not answer the query within the timeout. Raise the timeout, shorten the window, or check the server's load.")
	CodeUnauthorized = problem.Define("MS2003", problem.Error, pkg, "Prometheus Refused The Query",
		"Prometheus answered HTTP 401 or 403. Give a bearer token (or the headers) the server accepts.")
	CodeTLS = problem.Define("MS2004", problem.Error, pkg, "Prometheus TLS Failed",
		"The server's certificate is not trusted, or TLS failed otherwise. Trust the CA that signed it.")
	CodeQuery = problem.Define("MS2005", problem.Error, pkg, "Prometheus Query Failed",
		"The server answered, but not with a usable answer to meshscope's query. Check that the URL is a Prometheus (or compatible) query endpoint.")
	CodeFile = problem.Define("MS2006", problem.Error, pkg, "Invalid Observed Traffic File",
		"The snapshot file cannot be read, or is not Prometheus's answer to meshscope's query. Write it again with the command `terraform-provider-meshscope query` prints.")
	CodeConfig = problem.Define("MS2007", problem.Error, pkg, "Invalid Prometheus Settings",
		"The Prometheus client refuses its settings.")
	CodeEmpty = problem.Define("MS2008", problem.Error, pkg, "No Istio Traffic Observed",
		"The answer holds no series of istio_requests_total or istio_tcp_connections_opened_total in the window. That is no evidence, not evidence of no traffic: check that Prometheus scrapes the sidecars and that its retention covers the window.")
	CodeTwoSources = problem.Define("MS2009", problem.Error, pkg, "Two Sources Of Observed Traffic",
		"Both a Prometheus server and a snapshot file are given. Keep one: the file is a saved answer of the same query.")
	CodeNoSource = problem.Define("MS2010", problem.Error, pkg, "No Observed Traffic Source",
		"Neither a Prometheus server nor a snapshot file is given.")
	CodeEmptyFile = problem.Define("MS2011", problem.Error, pkg, "Empty Observed Traffic File",
		"The path of the snapshot file is empty. Give the path of the file the `query` command's curl line writes.")
	CodeMissingURL = problem.Define("MS2012", problem.Error, pkg, "Missing Prometheus URL",
		"A Prometheus server is configured without its base URL, such as \"http://prometheus.istio-system:9090\".")
	CodeInvalidURL = problem.Define("MS2013", problem.Error, pkg, "Invalid Prometheus URL",
		"The Prometheus URL is not an http(s) URL with a host, such as \"http://prometheus.istio-system:9090\".")
	CodeURLCredentials = problem.Define("MS2014", problem.Error, pkg, "Credentials In The Prometheus URL",
		"The Prometheus URL carries a user and password, which would be kept where the URL is (shell histories, plans). Give a bearer token, or an Authorization header, instead.")
	CodeInvalidWindow = problem.Define("MS2015", problem.Error, pkg, "Invalid Window",
		"The window is not a Prometheus duration longer than zero, such as \"7d\" or \"36h\".")
	CodeInvalidTimeout = problem.Define("MS2016", problem.Error, pkg, "Invalid Timeout",
		"The timeout of the query is not a duration longer than zero, such as \"30s\".")
	CodeTokenUnset = problem.Define("MS2017", problem.Error, pkg, "Bearer Token Not Set",
		"The environment variable named to hold the bearer token is unset or empty. Export the token in it.")
	CodeInvalidHeader = problem.Define("MS2018", problem.Error, pkg, "Invalid Prometheus Header",
		"A header to send is not an HTTP header: its name holds a character HTTP does not allow, or its value a line break.")
	CodeInvalidCA = problem.Define("MS2019", problem.Error, pkg, "Invalid CA Certificate",
		"The CA to trust holds no PEM certificate (-----BEGIN CERTIFICATE----- ...).")
	CodeWindowMismatch = problem.Define("MS2020", problem.Error, pkg, "Window Differs From The Snapshot",
		"A window was asked for, but the snapshot file holds the calls of another. Leave the window out (the file's is used), or write a snapshot over the window asked for.")
	CodeUnknownCallers = problem.Define("MS2021", problem.Warning, pkg, "Observed Callers Not In The Inventory",
		"Workloads the inventory does not hold made calls; their calls are not checked. Give their manifests, or ignore this if they are gone.")
	CodeUnattributed = problem.Define("MS2022", problem.Warning, pkg, "Observed Callers Istio Could Not Name",
		"Series whose caller Istio could not name (source_workload=\"unknown\": a client without a sidecar, or outside the mesh); they are left out.")
	CodeShortWindow = problem.Define("MS2024", problem.Warning, pkg, "Window Longer Than Prometheus Holds",
		"The window asked for is longer than the span Prometheus holds: its retention is shorter, or its oldest Istio sample is younger. Prometheus answers all the same, and the counts cover only the span it holds; they are labelled with that span. Shorten the window to it, or query a server with a longer retention (Thanos, Mimir).")
	CodeUnknownHosts = problem.Define("MS2023", problem.Warning, pkg, "Observed Hosts Not In The Inventory",
		"Calls went to service hosts the inventory does not hold; they are not checked. The inventory is likely incomplete: give the manifests of those services.")
)

// Setting names the setting of a Source at fault, in the domain's terms; each surface names
// it its own way (the provider's prometheus.url, the command line's --prometheus).
type Setting string

// The settings of a Source.
const (
	// SettingSource is the choice of a server or a file (both, or neither, given), and the
	// answer as a whole (no Istio series in it).
	SettingSource Setting = "source"
	// SettingFile is the snapshot file.
	SettingFile Setting = "file"
	// SettingURL is the Prometheus URL.
	SettingURL Setting = "url"
	// SettingWindow is the window asked for.
	SettingWindow Setting = "window"
	// SettingTimeout is the timeout of the query.
	SettingTimeout Setting = "timeout"
	// SettingToken is the bearer token, or the environment variable that holds it.
	SettingToken Setting = "token"
	// SettingHeaders are the headers sent with every request.
	SettingHeaders Setting = "headers"
	// SettingCA is the CA to trust (and the choice not to verify).
	SettingCA Setting = "ca_certificate"
)

// FaultKind says what went wrong when reading evidence, so the caller can name the setting at fault.
type FaultKind int

// The kinds of fault.
const (
	// FaultConfig: the settings themselves are wrong (a URL that does not parse, a CA that is not PEM).
	FaultConfig FaultKind = iota
	// FaultUnreachable: nothing answered at the URL (refused, no route, DNS).
	FaultUnreachable
	// FaultTimeout: the server did not answer within the timeout.
	FaultTimeout
	// FaultUnauthorized: the server answered 401 or 403.
	FaultUnauthorized
	// FaultTLS: the server's certificate was not trusted, or TLS failed otherwise.
	FaultTLS
	// FaultQuery: the server answered, but not with a usable answer to the query.
	FaultQuery
	// FaultFile: a snapshot file could not be read or parsed.
	FaultFile
	// FaultEmpty: the answer holds no Istio series: no evidence, which is not "no traffic".
	FaultEmpty
)

// Fault is an error reading evidence: its kind, its stable code, the setting at fault and
// the facts a surface words its message from. Match it by Code or Setting, never by its text.
type Fault struct {
	Kind FaultKind
	Code problem.Code
	// Setting is the setting at fault.
	Setting Setting
	// Where is the URL (without credentials) or the file.
	Where string
	// Value is the offending value, for a message: a window, a header's name, the name of an
	// environment variable. Never a secret.
	Value string
	// Window is the window the answer covers, when it says ("" for an answer without series).
	Window string
	// Status is the HTTP status when the server answered with an error.
	Status int
	Err    error
}

func (f *Fault) Error() string { return f.Err.Error() }
func (f *Fault) Unwrap() error { return f.Err }

// Input says the fault is in what the user wrote (a setting, a file), not in reaching a
// server or in what the server holds.
func (f *Fault) Input() bool { return f.Kind == FaultConfig || f.Kind == FaultFile }

// configFault is a fault of the settings.
func configFault(code problem.Code, setting Setting, value string, err error) *Fault {
	return &Fault{Kind: FaultConfig, Code: code, Setting: setting, Value: value, Err: err}
}
