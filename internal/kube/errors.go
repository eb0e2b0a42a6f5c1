package kube

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ConflictError is a server-side apply conflict with other field managers.
type ConflictError struct {
	Object   string
	Managers []string
	Fields   []string
	Err      error
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("applying %s conflicts with field manager(s) %s on %s", e.Object, strings.Join(e.Managers, ", "), strings.Join(e.Fields, ", "))
}

func (e *ConflictError) Unwrap() error { return e.Err }

// PermissionError is a Forbidden answer, with the RBAC rule that would allow the call.
type PermissionError struct {
	Verb      string
	Resource  schema.GroupVersionResource
	Namespace string
	Err       error
}

func (e *PermissionError) Error() string {
	group := e.Resource.Group
	if group == "" {
		group = `"" (core)`
	}
	scope := "cluster-wide"
	if e.Namespace != "" {
		scope = "in namespace " + e.Namespace
	}
	return fmt.Sprintf("the API server refused %s %s %s: grant verb %q on resource %q of apiGroup %s (see the README's ClusterRole): %v",
		e.Verb, e.Resource.Resource, scope, e.Verb, e.Resource.Resource, group, e.Err)
}

func (e *PermissionError) Unwrap() error { return e.Err }

// MissingCRDError means the Istio CRDs are not installed.
type MissingCRDError struct {
	Resource schema.GroupVersionResource
	Err      error
}

func (e *MissingCRDError) Error() string {
	return fmt.Sprintf("the cluster does not serve %s.%s/%s: install Istio's CRDs (istioctl install, or the istio/base Helm chart): %v",
		e.Resource.Resource, e.Resource.Group, e.Resource.Version, e.Err)
}

func (e *MissingCRDError) Unwrap() error { return e.Err }

// InvalidObjectError is an object the API server holds that the inventory
// refuses: configuration that Kubernetes' or Istio's validation rejects, written
// where that validation did not run (for example without Istio's webhook).
type InvalidObjectError struct {
	Kind, Namespace, Name string
	Err                   error
}

func (e *InvalidObjectError) Error() string {
	return fmt.Sprintf("the cluster's %s %s is invalid: %v", e.Kind, e.Object(), e.Err)
}

// Object is the object's name, namespace/name when it has a namespace.
func (e *InvalidObjectError) Object() string {
	if e.Namespace == "" {
		return e.Name
	}
	return e.Namespace + "/" + e.Name
}

func (e *InvalidObjectError) Unwrap() error { return e.Err }

// classify turns API errors into the typed errors above.
func classify(err error, verb string, gvr schema.GroupVersionResource, ns, object string) error {
	if err == nil {
		return nil
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		req := verb + " " + gvr.Resource
		if ns != "" {
			req += " in namespace " + ns
		}
		return &TimeoutError{Request: req, Err: err}
	case apierrors.IsForbidden(err):
		return &PermissionError{Verb: verb, Resource: gvr, Namespace: ns, Err: err}
	case apierrors.IsConflict(err):
		var status apierrors.APIStatus
		ce := &ConflictError{Object: object, Err: err}
		if errors.As(err, &status) && status.Status().Details != nil {
			seen := map[string]bool{}
			for _, c := range status.Status().Details.Causes {
				if c.Type != metav1.CauseTypeFieldManagerConflict {
					continue
				}
				ce.Fields = append(ce.Fields, c.Field)
				m := managerFromMessage(c.Message)
				if m != "" && !seen[m] {
					seen[m] = true
					ce.Managers = append(ce.Managers, m)
				}
			}
		}
		if len(ce.Managers) == 0 {
			ce.Managers = []string{managerFromMessage(err.Error())}
		}
		return ce
	case apierrors.IsNotFound(err) && gvr.Group == "networking.istio.io" && object == "":
		return &MissingCRDError{Resource: gvr, Err: err}
	}
	return err
}

// managerFromMessage extracts the manager from `conflict with "kubectl-edit" using ...`.
func managerFromMessage(msg string) string {
	i := strings.Index(msg, `conflict with "`)
	if i < 0 {
		return ""
	}
	rest := msg[i+len(`conflict with "`):]
	if j := strings.Index(rest, `"`); j >= 0 {
		return rest[:j]
	}
	return ""
}

// ConfigError is a kubeconfig that cannot give a client: a configured file is missing or
// unparseable, or the context asked for is not in it. Problem says which.
type ConfigError struct {
	Problem  ConfigProblem
	Path     string   // the file, for ConfigFileMissing and ConfigFileInvalid
	Context  string   // the context asked for, for ConfigContextUnknown
	Contexts []string // the contexts the kubeconfig has, sorted, for ConfigContextUnknown
	Err      error
}

// ConfigProblem is what is wrong with a kubeconfig.
type ConfigProblem int

// The kubeconfig problems ConfigError distinguishes.
const (
	ConfigFileMissing ConfigProblem = iota + 1
	ConfigFileInvalid
	ConfigContextUnknown
)

func (e *ConfigError) Error() string {
	switch e.Problem {
	case ConfigFileMissing:
		return fmt.Sprintf("the kubeconfig file %s does not exist", e.Path)
	case ConfigFileInvalid:
		return fmt.Sprintf("the kubeconfig file %s cannot be parsed: %v", e.Path, e.Err)
	default:
		return fmt.Sprintf("the kubeconfig has no context %q; it has %s", e.Context, quotedOrNone(e.Contexts))
	}
}

func (e *ConfigError) Unwrap() error { return e.Err }

func quotedOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// TimeoutError is a request the API server did not answer in time: it accepted the connection,
// then stayed silent, or answered too slowly.
type TimeoutError struct {
	Request string        // "list pods", "patch sidecars in namespace foo"
	After   time.Duration // the request timeout, when known
	Err     error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the API server did not answer %s within %s: %v", e.Request, e.After, e.Err)
}

// classify is the package's classify, with the request timeout filled in.
func (c *Client) classify(err error, verb string, gvr schema.GroupVersionResource, ns, object string) error {
	err = classify(err, verb, gvr, ns, object)
	var te *TimeoutError
	if errors.As(err, &te) && c.rc != nil {
		te.After = c.rc.Timeout
	}
	return err
}

func (e *TimeoutError) Unwrap() error { return e.Err }
