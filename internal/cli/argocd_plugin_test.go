package cli

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/meshscope/terraform-provider-meshscope/internal/gitops"
)

// TestArgoCDPlugin runs the generate command of the Config Management Plugin in
// examples/gitops/argocd-cmp/plugin.yaml as Argo CD's repo server does: through its command, in
// the application's directory, with the Application's plugin env as ARGOCD_ENV_*, and the binary
// on PATH. Its stdout must be YAML only, the objects of the environment's overlay, as the
// committed overlay builds them; a wrong environment prints nothing on stdout and fails.
func TestArgoCDPlugin(t *testing.T) {
	root := filepath.Join("..", "..", "examples", "gitops")
	b, err := os.ReadFile(filepath.Join(root, "argocd-cmp", "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var plugin struct {
		APIVersion string                `json:"apiVersion"`
		Kind       string                `json:"kind"`
		Metadata   struct{ Name string } `json:"metadata"`
		Spec       struct {
			Version  string `json:"version"`
			Discover struct {
				FileName string `json:"fileName"`
			} `json:"discover"`
			Generate struct {
				Command []string `json:"command"`
				Args    []string `json:"args"`
			} `json:"generate"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(b, &plugin); err != nil {
		t.Fatalf("plugin.yaml: %v", err)
	}
	if plugin.APIVersion != "argoproj.io/v1alpha1" || plugin.Kind != "ConfigManagementPlugin" || len(plugin.Spec.Generate.Command) == 0 {
		t.Fatalf("plugin.yaml is not a ConfigManagementPlugin with a generate command: %+v", plugin)
	}
	if _, err := os.Stat(filepath.Join(root, plugin.Spec.Discover.FileName)); err != nil {
		t.Errorf("discover.fileName %q does not match the example repository: %v", plugin.Spec.Discover.FileName, err)
	}

	bin := binaryOnPath(t)
	generate := func(env string) (string, string, error) {
		gen := plugin.Spec.Generate
		cmd := exec.Command(gen.Command[0], append(gen.Command[1:], gen.Args...)...) //nolint:gosec // the plugin's own command
		cmd.Dir = root
		cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), asBinaryEnv + "=1",
			"ARGOCD_APP_NAME=meshscope-" + env, "ARGOCD_APP_NAMESPACE=argocd"}
		if env != "" {
			cmd.Env = append(cmd.Env, "ARGOCD_ENV_MESHSCOPE_ENV="+env)
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}

	// The committed overlay, built in process.
	files := map[string][]byte{}
	mesh := filepath.Join(root, "mesh")
	if err := filepath.WalkDir(mesh, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(mesh, p)
		files[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"dev", "prod"} {
		out, errs, err := generate(env)
		if err != nil {
			t.Fatalf("%s: generate: %v\nstderr:\n%s", env, err, errs)
		}
		want, err := gitops.BuildOverlay(files, env)
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("%s: generate printed\n%s\nthe committed overlay builds\n%s", env, out, want)
		}
		// YAML only: every document is an object with apiVersion, kind and a name.
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
		n := 0
		for {
			var obj map[string]any
			err := dec.Decode(&obj)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: stdout is not YAML: %v\n%s", env, err, out)
			}
			meta, _ := obj["metadata"].(map[string]any)
			if obj["apiVersion"] == nil || obj["kind"] == nil || meta["name"] == nil {
				t.Errorf("%s: document %d is not a Kubernetes object: %v", env, n, obj)
			}
			n++
		}
		if n != 2 {
			t.Errorf("%s: %d objects, want the seed's 2 Sidecars", env, n)
		}
	}

	// A wrong or missing environment: nothing on stdout, and the reason on stderr.
	for env, why := range map[string]string{"staging": `environment "staging" is not in settings.yaml`, "": "set MESHSCOPE_ENV"} {
		out, errs, err := generate(env)
		if err == nil || out != "" || !strings.Contains(errs, why) {
			t.Errorf("env %q: err %v, stdout %q, stderr %q; want a failure saying %q", env, err, out, errs, why)
		}
	}
}

// TestPullRequestRecipe runs examples/gitops/ci/meshscope-diff.sh, the script the GitHub and
// GitLab recipes call, on two checkouts of the example repository, with the binary on PATH: a
// pull request that adds kube-dns to prod's extra_system_hosts gets a comment, behind its marker,
// naming the host on both proxies; an unchanged one says no proxy changes.
func TestPullRequestRecipe(t *testing.T) {
	example, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	bin := binaryOnPath(t)
	checkout := func(settings func(string) string) string {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(filepath.Join(example, "gitops"))); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "settings.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "settings.yaml"), []byte(settings(string(b))), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	same := func(s string) string { return s }
	addDNS := func(s string) string {
		out := strings.Replace(s, "      - kube-system/kube-dns.kube-system.svc.cluster.local\n", "", 1)
		if out == s {
			t.Fatal("settings.yaml no longer lists kube-dns in prod's extra_system_hosts: the case tests nothing")
		}
		return out
	}
	run := func(base, head string) (string, string, error) {
		out := filepath.Join(t.TempDir(), "comment.md")
		cmd := exec.Command("sh", filepath.Join(example, "gitops", "ci", "meshscope-diff.sh"), base, head, "prod", out) //nolint:gosec // the recipe's script
		cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), asBinaryEnv + "=1",
			"MESHSCOPE_INVENTORY=" + filepath.Join(example, "seed", "manifests")}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return "", stderr.String(), err
		}
		b, err := os.ReadFile(out)
		return string(b), stderr.String(), err
	}
	// The base branch lacks kube-dns in prod; the pull request adds it.
	base, head := checkout(addDNS), checkout(same)
	comment, errs, err := run(base, head)
	if err != nil {
		t.Fatalf("script: %v\n%s", err, errs)
	}
	if !strings.HasPrefix(comment, "<!-- meshscope-diff:prod -->\n") || strings.Count(comment, "kube-dns.kube-system.svc.cluster.local") < 2 ||
		!strings.Contains(comment, "| bar |") || !strings.Contains(comment, "| foo |") {
		t.Errorf("comment:\n%s", comment)
	}
	comment, errs, err = run(head, head)
	if err != nil {
		t.Fatalf("script: %v\n%s", err, errs)
	}
	if !strings.HasPrefix(comment, "<!-- meshscope-diff:prod -->\n### meshscope: no proxy changes in prod") {
		t.Errorf("unchanged: comment:\n%s", comment)
	}
	// Broken input fails the job rather than posting a wrong comment.
	if _, errs, err := run(base, t.TempDir()); err == nil {
		t.Errorf("an empty head checkout: no failure (stderr %s)", errs)
	}
}

// binaryOnPath is a directory holding terraform-provider-meshscope, a link to the test binary,
// which runs the command line when asBinaryEnv is 1 in its environment.
func binaryOnPath(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(self, filepath.Join(bin, "terraform-provider-meshscope")); err != nil {
		t.Fatal(err)
	}
	return bin
}
