package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
	"github.com/meshscope/terraform-provider-meshscope/internal/gitops"
)

func TestRenderWriteCheckAndRewrite(t *testing.T) {
	out := filepath.Join(t.TempDir(), "mesh")
	sidecar := fixture.SidecarFooFile(t)
	// The inventory's other kinds are ignored: only the Sidecar goes into the base.
	args := []string{"render", "-f", fixture.SeedFile(t), "-f", sidecar, "--out", out, "--env", "dev", "--env", "prod"}

	code, stdout, stderr := run(t, "", append(args, "--check")...)
	if code != ExitChanged || !strings.Contains(stdout, "create base/foo/test-app.yaml") {
		t.Fatalf("--check on a missing directory: exit %d, %q %q", code, stdout, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("--check wrote %s (%v)", out, err)
	}

	code, stdout, stderr = run(t, "", args...)
	if code != ExitOK || !strings.Contains(stdout, "1 Sidecars, environments dev, prod: 4 created, 0 updated, 0 deleted, 0 unchanged") {
		t.Fatalf("render: exit %d, %q %q", code, stdout, stderr)
	}
	for _, p := range []string{"base/kustomization.yaml", "base/foo/test-app.yaml", "overlays/dev/kustomization.yaml", "overlays/prod/kustomization.yaml", gitops.OwnershipFile} {
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Errorf("%s not written: %v", p, err)
		}
	}

	code, stdout, _ = run(t, "", append(args, "--check")...)
	if code != ExitOK || !strings.Contains(stdout, "is up to date (4 files)") {
		t.Fatalf("--check after render: exit %d, %q", code, stdout)
	}

	// Rendering again writes nothing.
	past := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	kust := filepath.Join(out, "overlays/dev/kustomization.yaml")
	if err := os.Chtimes(kust, past, past); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = run(t, "", args...)
	if code != ExitOK || !strings.Contains(stdout, "0 created, 0 updated, 0 deleted, 4 unchanged") {
		t.Fatalf("second render: exit %d, %q", code, stdout)
	}
	if st, _ := os.Stat(kust); !st.ModTime().Equal(past) {
		t.Error("an unchanged file was rewritten")
	}

	// A hand edit: --check exits 3 and leaves it; render puts it back.
	if err := os.WriteFile(kust, []byte("# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = run(t, "", append(args, "--check")...)
	if code != ExitChanged || !strings.Contains(stdout, "update overlays/dev/kustomization.yaml") {
		t.Fatalf("--check after a hand edit: exit %d, %q", code, stdout)
	}
	if b, _ := os.ReadFile(kust); string(b) != "# edited\n" {
		t.Error("--check wrote the file")
	}
	if code, _, _ = run(t, "", args...); code != ExitOK {
		t.Fatalf("render after a hand edit: exit %d", code)
	}
	if b, _ := os.ReadFile(kust); string(b) == "# edited\n" {
		t.Error("render did not restore the edited file")
	}

	// Dropping an environment deletes its files; a file of someone else stays.
	if err := os.WriteFile(filepath.Join(out, "overlays", "NOTES.md"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = run(t, "", "render", "-f", sidecar, "--out", out, "--env", "dev")
	if code != ExitOK || !strings.Contains(stdout, "delete overlays/prod/kustomization.yaml") {
		t.Fatalf("render with dev only: exit %d, %q", code, stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "overlays", "prod")); !os.IsNotExist(err) {
		t.Errorf("overlays/prod is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(out, "overlays", "NOTES.md")); err != nil {
		t.Errorf("a foreign file was deleted: %v", err)
	}
}

// The command line renders the committed example exactly as Terraform does:
// the Sidecars of its base and settings.yaml reproduce examples/gitops/mesh.
func TestRenderExampleIsUpToDate(t *testing.T) {
	example := filepath.Join("..", "..", "examples", "gitops")
	code, stdout, stderr := run(t, "", "render", "-f", filepath.Join(example, "mesh", "base"),
		"--settings", filepath.Join(example, "settings.yaml"), "--out", filepath.Join(example, "mesh"), "--check")
	if code != ExitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
}

func TestRenderSettingsAndStdin(t *testing.T) {
	dir := t.TempDir()
	settings := filepath.Join(dir, "settings.yaml")
	if err := os.WriteFile(settings, []byte(`environments:
  prod:
    outbound_traffic_policy: REGISTRY_ONLY
argocd:
  repo_url: https://git.example.com/gitops.git
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := run(t, fixture.SidecarFoo, "render", "-f", "-", "--settings", settings, "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	app, err := os.ReadFile(filepath.Join(out, "argocd", "prod.yaml"))
	if err != nil || !strings.Contains(string(app), "path: overlays/prod") {
		t.Errorf("argocd/prod.yaml: %v\n%s", err, app)
	}
	kust, _ := os.ReadFile(filepath.Join(out, "overlays", "prod", "kustomization.yaml"))
	if !strings.Contains(string(kust), "mode: REGISTRY_ONLY") {
		t.Errorf("overlays/prod/kustomization.yaml lacks the policy:\n%s", kust)
	}
}

func TestRenderExitCodes(t *testing.T) {
	sidecar := fixture.SidecarFooFile(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badSettings := write("bad-settings.yaml", "environments:\n  dev:\n    labelz: {a: b}\n")
	badEnv := write("bad-env.yaml", "environments:\n  Dev_1: {}\n")
	badPatch := write("bad-patch.yaml", "environments:\n  dev:\n    patches:\n    - patch: '[{\"op\": \"remove\", \"path\": \"/spec/nothing\"}]'\n      target: {kind: Sidecar}\n")
	foreignDir := filepath.Join(dir, "foreign")
	if err := os.MkdirAll(filepath.Join(foreignDir, "base"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("foreign/base/kustomization.yaml", "resources: []\n")
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"missing -f", []string{"render", "--out", out, "--env", "dev"}, ExitUsage, "missing -f"},
		{"missing --out", []string{"render", "-f", sidecar, "--env", "dev"}, ExitUsage, "missing --out"},
		{"no environment", []string{"render", "-f", sidecar, "--out", out}, ExitUsage, "no environment"},
		{"unknown flag", []string{"render", "--frobnicate"}, ExitUsage, "frobnicate"},
		{"extra argument", []string{"render", "-f", sidecar, "--out", out, "--env", "dev", "more"}, ExitUsage, `"more"`},
		{"help", []string{"render", "-h"}, ExitOK, "--check"},
		{"missing file", []string{"render", "-f", "testdata/nope.yaml", "--out", out, "--env", "dev"}, ExitError, "nope.yaml"},
		{"duplicate Sidecar", []string{"render", "-f", sidecar, "-f", sidecar, "--out", out, "--env", "dev"}, ExitError, "Duplicate Sidecar"},
		{"unknown settings field", []string{"render", "-f", sidecar, "--out", out, "--settings", badSettings}, ExitError, "labelz"},
		{"invalid environment", []string{"render", "-f", sidecar, "--out", out, "--settings", badEnv}, ExitError, `Invalid Environment Name`},
		{"patch kustomize cannot apply", []string{"render", "-f", sidecar, "--out", out, "--settings", badPatch}, ExitError, `environments["dev"].patches[0]: Invalid Patch`},
		{"foreign file", []string{"render", "-f", sidecar, "--out", foreignDir, "--env", "dev"}, ExitError, "did not write"},
		{"foreign file, check", []string{"render", "-f", sidecar, "--out", foreignDir, "--env", "dev", "--check"}, ExitError, "did not write"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", tc.args...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.msg) {
				t.Errorf("exit %d (want %d), output %q, want it to contain %q", code, tc.code, stdout+stderr, tc.msg)
			}
		})
	}
	code, _, stderr := run(t, "apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: [\n", "render", "-f", "-", "--out", out, "--env", "dev")
	if code != ExitError || !strings.Contains(stderr, "stdin: document 0") {
		t.Errorf("broken YAML on stdin: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed render wrote %s", out)
	}
}
