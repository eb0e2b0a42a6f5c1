package provider

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
	"github.com/meshscope/terraform-provider-meshscope/internal/gitops"
)

// overlayFooSidecar is the compiled Sidecar of the seed's foo scope.
var overlayFooSidecar = fixture.SidecarFoo

// overlayConfig is a meshscope_kustomize_overlay "x" writing dir, with the
// given environments (HCL) and argocd (HCL, or "" for none).
func overlayConfig(dir, environments, argocd string) string {
	cfg := fmt.Sprintf(`
provider "meshscope" {}

resource "meshscope_kustomize_overlay" "x" {
  path         = %q
  sidecars     = [%s]
  environments = %s
`, dir, heredoc(overlayFooSidecar), environments)
	if argocd != "" {
		cfg += "  argocd = " + argocd + "\n"
	}
	return cfg + "}\n"
}

const (
	overlayEnvs = `{
    dev  = { labels = { environment = "dev" } }
    prod = {
      outbound_traffic_policy = "REGISTRY_ONLY"
      extra_system_hosts      = ["monitoring/*"]
      patches = [{
        target = { kind = "Sidecar", namespace = "foo" }
        patch  = "[{\"op\": \"add\", \"path\": \"/metadata/labels/tier\", \"value\": \"gold\"}]"
      }]
    }
  }`
	overlayArgoCD = `{
    repo_url    = "https://git.example.com/platform/gitops.git"
    path_prefix = "mesh"
    sync_policy = { automated = true, prune = true }
  }`
)

// overlayLayout is what overlayConfig(dir, overlayEnvs, overlayArgoCD) writes.
func overlayLayout(t *testing.T, withProd bool) *gitops.Layout {
	t.Helper()
	s := gitops.Settings{Environments: map[string]gitops.Environment{
		"dev": {Labels: map[string]string{"environment": "dev"}},
	}}
	if withProd {
		s.Environments["prod"] = gitops.Environment{
			OutboundTrafficPolicy: "REGISTRY_ONLY",
			ExtraSystemHosts:      []string{"monitoring/*"},
			Patches: []gitops.Patch{{
				Target: &gitops.Target{Kind: "Sidecar", Namespace: "foo"},
				Patch:  `[{"op": "add", "path": "/metadata/labels/tier", "value": "gold"}]`,
			}},
		}
		s.ArgoCD = &gitops.ArgoCD{RepoURL: "https://git.example.com/platform/gitops.git", PathPrefix: "mesh",
			SyncPolicy: &gitops.SyncPolicy{Automated: true, Prune: true}}
	}
	l, probs := gitops.Build(gitops.Input{Sidecars: []string{overlayFooSidecar}, Settings: s})
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	return l
}

// filesCheck is an exact check of the `files` map.
func filesCheck(hashes map[string]string) knownvalue.Check {
	m := map[string]knownvalue.Check{}
	for p, h := range hashes {
		m[p] = knownvalue.StringExact(h)
	}
	return knownvalue.MapExact(m)
}

// diskFiles lists the regular files under dir, relative and slash-separated, sorted.
func diskFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	sort.Strings(out)
	return out, err
}

// past is the modification time the files get, so that any rewrite shows.
var overlayPast = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

func ageFiles(t *testing.T, dir string) {
	t.Helper()
	files, err := diskFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range files {
		if err := os.Chtimes(filepath.Join(dir, p), overlayPast, overlayPast); err != nil {
			t.Fatal(err)
		}
	}
}

// expectRewritten checks that exactly the files want were written since ageFiles.
func expectRewritten(dir string, want ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		files, err := diskFiles(dir)
		if err != nil {
			return err
		}
		var got []string
		for _, p := range files {
			st, err := os.Stat(filepath.Join(dir, p))
			if err != nil {
				return err
			}
			if !st.ModTime().Equal(overlayPast) {
				got = append(got, p)
			}
		}
		if want == nil {
			want = []string{}
		}
		if got == nil {
			got = []string{}
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("files written: %v, want %v", got, want)
		}
		return nil
	}
}

// expectDisk checks that dir holds exactly the layout's files, the ownership file and others.
func expectDisk(dir string, l *gitops.Layout, others ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		want := append(l.Paths(), gitops.OwnershipFile)
		want = append(want, others...)
		sort.Strings(want)
		got, err := diskFiles(dir)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("files on disk:\n%v\nwant:\n%v", got, want)
		}
		for p, b := range l.Files {
			cur, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				return err
			}
			if string(cur) != string(b) {
				return fmt.Errorf("%s holds:\n%s\nwant:\n%s", p, cur, b)
			}
		}
		return nil
	}
}

func TestKustomizeOverlayResource_WritesRepairsShrinksAndDeletesOnlyItsFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gitops")
	full, smaller := overlayLayout(t, true), overlayLayout(t, false)
	foreign := []string{"README.md", "base/NOTES.md"}
	cfg := overlayConfig(dir, overlayEnvs, overlayArgoCD)
	overlayPaths := knownvalue.MapExact(map[string]knownvalue.Check{
		"dev":  knownvalue.StringExact(dir + "/overlays/dev"),
		"prod": knownvalue.StringExact(dir + "/overlays/prod"),
	})

	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// Files of others live in the directory already.
				PreConfig: func() {
					for _, p := range foreign {
						full := filepath.Join(dir, p)
						if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(full, []byte("not meshscope's\n"), 0o644); err != nil {
							t.Fatal(err)
						}
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("meshscope_kustomize_overlay.x", plancheck.ResourceActionCreate),
						// The plan already says which files are written, with their content's sha256.
						plancheck.ExpectKnownValue("meshscope_kustomize_overlay.x", tfjsonpath.New("files"), filesCheck(full.Hashes())),
						plancheck.ExpectKnownValue("meshscope_kustomize_overlay.x", tfjsonpath.New("overlay_paths"), overlayPaths),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("meshscope_kustomize_overlay.x", tfjsonpath.New("id"), knownvalue.StringExact(dir)),
					statecheck.ExpectKnownValue("meshscope_kustomize_overlay.x", tfjsonpath.New("files"), filesCheck(full.Hashes())),
					statecheck.ExpectKnownValue("meshscope_kustomize_overlay.x", tfjsonpath.New("overlay_paths"), overlayPaths),
				},
				Check: expectDisk(dir, full, foreign...),
			},
			{
				// Unchanged inputs: an empty plan, and no file is written.
				PreConfig: func() { ageFiles(t, dir) },
				Config:    cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: expectRewritten(dir),
			},
			{
				// A hand edit and a hand deletion are drift: the plan updates the
				// two files back, and the apply rewrites those two only.
				PreConfig: func() {
					ageFiles(t, dir)
					if err := os.WriteFile(filepath.Join(dir, "overlays/prod/kustomization.yaml"), []byte("# edited by hand\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					if err := os.Remove(filepath.Join(dir, "base/foo/test-app.yaml")); err != nil {
						t.Fatal(err)
					}
					if err := os.Chtimes(filepath.Join(dir, "overlays/prod/kustomization.yaml"), overlayPast, overlayPast); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("meshscope_kustomize_overlay.x", plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue("meshscope_kustomize_overlay.x", tfjsonpath.New("files"), filesCheck(full.Hashes())),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeTestCheckFunc(
					expectDisk(dir, full, foreign...),
					expectRewritten(dir, "base/foo/test-app.yaml", "overlays/prod/kustomization.yaml"),
				),
			},
			{
				// Drift alone, seen by a plan: the refreshed state holds the edited file's hash.
				PreConfig: func() {
					if err := os.WriteFile(filepath.Join(dir, "base/kustomization.yaml"), []byte("resources: []\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				},
				Config:             cfg,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// Fewer environments and no Argo CD: their files and the
				// directories meshscope created for them go; the others' files stay.
				Config: overlayConfig(dir, `{ dev = { labels = { environment = "dev" } } }`, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("meshscope_kustomize_overlay.x", plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue("meshscope_kustomize_overlay.x", tfjsonpath.New("files"), filesCheck(smaller.Hashes())),
					},
				},
				Check: resource.ComposeTestCheckFunc(
					expectDisk(dir, smaller, foreign...),
					func(*terraform.State) error {
						for _, d := range []string{"argocd", "overlays/prod"} {
							if _, err := os.Stat(filepath.Join(dir, d)); !errors.Is(err, fs.ErrNotExist) {
								return fmt.Errorf("%s is still there (%v)", d, err)
							}
						}
						return nil
					},
				),
			},
		},
		// Destroy deletes what meshscope wrote, and only that.
		CheckDestroy: func(*terraform.State) error {
			got, err := diskFiles(dir)
			if err != nil {
				return err
			}
			if !slices.Equal(got, foreign) {
				return fmt.Errorf("after destroy: %v, want only %v", got, foreign)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				return err
			}
			if len(entries) != 2 {
				return fmt.Errorf("after destroy, the directory holds %d entries, want README.md and base/", len(entries))
			}
			return nil
		},
	})
}

// examplesGitops is examples/gitops, whose mesh/ is the committed layout.
func examplesGitops(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "gitops"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// The example, through the real terraform: the plan knows every file, apply
// writes exactly the committed layout, and a re-plan is empty.
func TestKustomizeOverlayResource_ExampleWritesTheCommittedLayout(t *testing.T) {
	// main.tf requires meshscope/meshscope: serve the test provider under that address.
	t.Setenv(resource.EnvTfAccProviderNamespace, "meshscope")
	example := examplesGitops(t)
	committed := filepath.Join(example, "mesh")
	paths, err := diskFiles(committed)
	if err != nil {
		t.Fatal(err)
	}
	paths = slices.DeleteFunc(paths, func(p string) bool { return p == gitops.OwnershipFile })
	want, err := gitops.Hashes(committed, paths)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "mesh")
	vars := config.Variables{
		"seed_manifests": config.StringVariable(seedDir(t)),
		"out":            config.StringVariable(out),
	}
	resource.UnitTest(t, resource.TestCase{
		// With the provider block in the directory, the providers go on each step.
		Steps: []resource.TestStep{
			{
				ProtoV6ProviderFactories: testProtoV6ProviderFactories,
				ConfigDirectory:          config.StaticDirectory(example),
				ConfigVariables:          vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue("meshscope_kustomize_overlay.mesh", tfjsonpath.New("files"), filesCheck(want)),
					},
				},
				Check: func(*terraform.State) error {
					got, err := diskFiles(out)
					if err != nil {
						return err
					}
					if wantFiles := sortedCopy(append(slices.Clone(paths), gitops.OwnershipFile)); !slices.Equal(got, wantFiles) {
						return fmt.Errorf("wrote %v, want %v", got, paths)
					}
					for _, p := range paths {
						a, _ := os.ReadFile(filepath.Join(out, p))
						b, _ := os.ReadFile(filepath.Join(committed, p))
						if string(a) != string(b) {
							return fmt.Errorf("%s differs from examples/gitops/mesh/%s (go test ./internal/gitops -update):\n%s", p, p, a)
						}
					}
					return nil
				},
			},
			{
				ProtoV6ProviderFactories: testProtoV6ProviderFactories,
				ConfigDirectory:          config.StaticDirectory(example),
				ConfigVariables:          vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
		},
	})
}

func TestKustomizeOverlayResource_BadInputIsAnAttributeError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gitops")
	service := heredoc("apiVersion: v1\nkind: Service\nmetadata:\n  name: foo\n  namespace: foo")
	cases := map[string]struct {
		config string
		err    string
	}{
		"broken YAML": {
			config: strings.Replace(overlayConfig(dir, `{ dev = {} }`, ""), "sidecars     = [", "sidecars     = [\"kind: [\\n\", ", 1),
			err:    `(?s)Invalid Sidecar Manifest.*sidecars\[0\]: document 0`,
		},
		"not a Sidecar": {
			config: strings.Replace(overlayConfig(dir, `{ dev = {} }`, ""), "sidecars     = [", "sidecars     = ["+service+", ", 1),
			err:    `(?s)Invalid Sidecar Manifest.*v1 Service is not a\s+Sidecar`,
		},
		"environment name": {
			config: overlayConfig(dir, `{ Prod_EU = {} }`, ""),
			err:    `(?s)must be a DNS label`,
		},
		"egress host": {
			config: overlayConfig(dir, `{ dev = { extra_system_hosts = ["monitoring"] } }`, ""),
			err:    `(?s)Egress Host.*"monitoring"`,
		},
		"JSON patch without target": {
			config: overlayConfig(dir, `{ dev = { patches = [{ patch = "[{\"op\": \"remove\", \"path\": \"/spec/egress\"}]" }] } }`, ""),
			err:    `(?s)Invalid Patch.*needs a target`,
		},
		"patch kustomize cannot apply": {
			config: overlayConfig(dir, `{ dev = { patches = [{ target = { kind = "Sidecar" }, patch = "- op: replace\n  path: /spec/outboundTrafficPolicy/mode\n  value: ALLOW_ANY\n" }] } }`, ""),
			err:    `(?s)Invalid Patch.*kustomize cannot apply patch 0 of environment\s+"dev"`,
		},
		"prune without automated": {
			config: overlayConfig(dir, `{ dev = {} }`, `{ repo_url = "https://x.example/y.git", sync_policy = { prune = true } }`),
			err:    `(?s)Sync Options Without Automated Sync`,
		},
		"repo URL": {
			config: overlayConfig(dir, `{ dev = {} }`, `{ repo_url = "nowhere" }`),
			err:    `(?s)Invalid Repository URL.*"nowhere"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      tc.config,
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.err),
				}},
			})
		})
	}
}

// A file in the way that meshscope did not write stops the plan, and nothing is written.
func TestKustomizeOverlayResource_foreignFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gitops")
	if err := os.MkdirAll(filepath.Join(dir, "base"), 0o755); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "base", "kustomization.yaml")
	if err := os.WriteFile(mine, []byte("resources: [hand-made.yaml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      overlayConfig(dir, `{ dev = {} }`, ""),
			ExpectError: regexp.MustCompile(`(?s)Files Not Owned By meshscope.*"base/kustomization.yaml"`),
		}},
	})
	if got, _ := diskFiles(dir); !slices.Equal(got, []string{"base/kustomization.yaml"}) {
		t.Errorf("files after the failed plan: %v", got)
	}
}

func TestLayoutProblemPath(t *testing.T) {
	cases := []struct {
		loc  gitops.Location
		want path.Path
	}{
		{gitops.Location{Attribute: gitops.AttrSidecars, Index: 2}, path.Root("sidecars").AtListIndex(2)},
		{gitops.Location{Attribute: gitops.AttrEnvironments, Env: "prod", Index: -1}, path.Root("environments").AtMapKey("prod")},
		{gitops.Location{Attribute: gitops.AttrEnvironments, Env: "prod", Field: "patches", Index: 1},
			path.Root("environments").AtMapKey("prod").AtName("patches").AtListIndex(1)},
		{gitops.Location{Attribute: gitops.AttrEnvironments, Env: "dev", Field: "labels", Index: -1, Key: "tier"},
			path.Root("environments").AtMapKey("dev").AtName("labels").AtMapKey("tier")},
		{gitops.Location{Attribute: gitops.AttrArgoCD, Field: "sync_policy", Index: -1}, path.Root("argocd").AtName("sync_policy")},
	}
	for _, tc := range cases {
		got, ok := layoutProblemPath(gitops.Problem{Location: tc.loc})
		if !ok || !got.Equal(tc.want) {
			t.Errorf("%+v: got %s (%v), want %s", tc.loc, got, ok, tc.want)
		}
	}
	if _, ok := layoutProblemPath(gitops.Problem{Location: gitops.Location{Index: -1}}); ok {
		t.Error("a problem of the input as a whole has no attribute")
	}
}

// A new path replaces the resource: the old directory's files go, the new one is written.
func TestKustomizeOverlayResource_pathChange(t *testing.T) {
	root := t.TempDir()
	oldDir, newDir := filepath.Join(root, "old"), filepath.Join(root, "new")
	l := overlayLayout(t, false)
	envs := `{ dev = { labels = { environment = "dev" } } }`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: overlayConfig(oldDir, envs, ""),
				Check:  expectDisk(oldDir, l),
			},
			{
				Config: overlayConfig(newDir, envs, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("meshscope_kustomize_overlay.x", plancheck.ResourceActionDestroyBeforeCreate),
						plancheck.ExpectKnownValue("meshscope_kustomize_overlay.x", tfjsonpath.New("files"), filesCheck(l.Hashes())),
					},
				},
				Check: resource.ComposeTestCheckFunc(
					expectDisk(newDir, l),
					func(*terraform.State) error {
						if _, err := os.Stat(oldDir); !errors.Is(err, fs.ErrNotExist) {
							return fmt.Errorf("the old directory, which meshscope created, is still there (%v)", err)
						}
						return nil
					},
				),
			},
		},
	})
}
