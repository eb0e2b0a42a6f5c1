package gitops

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"
)

// past is the modification time files are set to, so that a rewrite shows.
var past = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

func seedLayout(t *testing.T, s Settings) *Layout {
	t.Helper()
	l, probs := Build(Input{Sidecars: []string{seedFoo, seedBar}, Settings: s})
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	return l
}

// tree lists the regular files under dir, relative and slash-separated.
func tree(t *testing.T, dir string) []string {
	t.Helper()
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
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func ageAll(t *testing.T, dir string) {
	t.Helper()
	for _, p := range tree(t, dir) {
		if err := os.Chtimes(filepath.Join(dir, p), past, past); err != nil {
			t.Fatal(err)
		}
	}
}

// touched returns the files whose modification time is no longer `past`.
func touched(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, p := range tree(t, dir) {
		st, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if !st.ModTime().Equal(past) {
			out = append(out, p)
		}
	}
	return out
}

func TestWriteOwnsOnlyItsFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "mesh")
	// Someone else's files: one beside the layout, one inside a layout directory.
	for _, p := range []string{"README.md", "base/NOTES.md"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	l := seedLayout(t, seedSettings())
	changes, err := Write(dir, l.Files, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != len(l.Files) {
		t.Errorf("first write: %d changes, want %d creates: %v", len(changes), len(l.Files), changes)
	}
	want := append(l.Paths(), "README.md", "base/NOTES.md", OwnershipFile)
	sort.Strings(want)
	if got := tree(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files:\n%v\nwant:\n%v", got, want)
	}
	own, err := ReadOwnership(dir)
	if err != nil {
		t.Fatal(err)
	}
	for p, h := range l.Hashes() {
		if own.Files[p] != h {
			t.Errorf("ownership of %s = %q, want %q", p, own.Files[p], h)
		}
	}
	// dir and base/ existed; the others were created.
	if wantDirs := []string{"argocd", "base/bar", "base/foo", "overlays", "overlays/dev", "overlays/prod"}; !slices.Equal(own.Dirs, wantDirs) {
		t.Errorf("created dirs %v, want %v", own.Dirs, wantDirs)
	}

	// Unchanged input: nothing is written, modification times stay.
	ageAll(t, dir)
	changes, err = Write(dir, seedLayout(t, seedSettings()).Files, nil)
	if err != nil || len(changes) != 0 {
		t.Fatalf("second write: changes %v, err %v", changes, err)
	}
	if got := touched(t, dir); len(got) != 0 {
		t.Errorf("unchanged input rewrote %v", got)
	}

	// A hand edit is seen, and rewritten by the next write; nothing else is touched.
	edited := filepath.Join(dir, "overlays/prod/kustomization.yaml")
	if err := os.WriteFile(edited, []byte("# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deleted := filepath.Join(dir, "base/foo/test-app.yaml")
	if err := os.Remove(deleted); err != nil {
		t.Fatal(err)
	}
	ageAll(t, dir)
	hashes, err := Hashes(dir, l.Paths())
	if err != nil {
		t.Fatal(err)
	}
	if hashes["overlays/prod/kustomization.yaml"] == l.Hashes()["overlays/prod/kustomization.yaml"] {
		t.Error("Hashes does not see the hand edit")
	}
	if _, ok := hashes["base/foo/test-app.yaml"]; ok {
		t.Error("Hashes reports a deleted file")
	}
	changes, err = Diff(dir, l.Files, nil)
	wantChanges := []Change{{"base/foo/test-app.yaml", Create}, {"overlays/prod/kustomization.yaml", Update}}
	if err != nil || !slices.Equal(changes, wantChanges) {
		t.Fatalf("diff after hand edits: %v, %v; want %v", changes, err, wantChanges)
	}
	if _, err := Write(dir, l.Files, nil); err != nil {
		t.Fatal(err)
	}
	if got := touched(t, dir); !slices.Equal(got, []string{"base/foo/test-app.yaml", "overlays/prod/kustomization.yaml"}) {
		t.Errorf("rewrote %v, want only the two hand-changed files", got)
	}

	// Dropping an environment and Argo CD deletes their owned files and the
	// directories meshscope created for them, and nothing else.
	s := seedSettings()
	delete(s.Environments, "prod")
	s.ArgoCD = nil
	smaller := seedLayout(t, s)
	changes, err = Write(dir, smaller.Files, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantChanges = []Change{{"argocd/dev.yaml", Delete}, {"argocd/kustomization.yaml", Delete}, {"argocd/prod.yaml", Delete}, {"overlays/prod/kustomization.yaml", Delete}}
	if !slices.Equal(changes, wantChanges) {
		t.Errorf("changes %v, want %v", changes, wantChanges)
	}
	for _, d := range []string{"argocd", "overlays/prod"} {
		if _, err := os.Stat(filepath.Join(dir, d)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there (err %v)", d, err)
		}
	}

	// Remove deletes only what meshscope wrote; the others' files and dirs stay.
	removed, err := Remove(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, smaller.Paths()) {
		t.Errorf("removed %v, want %v", removed, smaller.Paths())
	}
	if got := tree(t, dir); !slices.Equal(got, []string{"README.md", "base/NOTES.md"}) {
		t.Errorf("left %v, want the two foreign files", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("left %d entries in the directory, want README.md and base/", len(entries))
	}
}

func TestWriteCreatesAndRemovesItsDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gitops", "mesh")
	l := seedLayout(t, seedSettings())
	if _, err := Write(dir, l.Files, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Remove(dir, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the directory meshscope created is still there (err %v)", err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); err != nil {
		t.Errorf("the parent directory went too: %v", err)
	}
}

func TestWriteRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "base", "kustomization.yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("resources: [mine.yaml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := seedLayout(t, seedSettings())
	_, err := Write(dir, l.Files, nil)
	var foreign *ForeignFilesError
	if !errors.As(err, &foreign) || !slices.Equal(foreign.Paths, []string{"base/kustomization.yaml"}) {
		t.Fatalf("err = %v, want a ForeignFilesError for base/kustomization.yaml", err)
	}
	if got := tree(t, dir); !slices.Equal(got, []string{"base/kustomization.yaml"}) {
		t.Errorf("wrote %v despite the foreign file", got)
	}

	// A file that already holds the wanted content is adopted.
	if err := os.WriteFile(p, l.Files["base/kustomization.yaml"], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, l.Files, nil); err != nil {
		t.Fatalf("identical file not adopted: %v", err)
	}

	// Paths owned through extra (the Terraform state) count as owned.
	dir2 := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir2, "base"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir2, "base", "kustomization.yaml"), []byte("# stale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir2, l.Files, []string{"base/kustomization.yaml"}); err != nil {
		t.Fatalf("file owned through extra: %v", err)
	}
}

// A hand-edited ownership file cannot make meshscope delete outside its directory.
func TestOwnershipStaysInside(t *testing.T) {
	root := t.TempDir()
	victim := filepath.Join(root, "victim.txt")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "mesh")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(Ownership{Generator: "meshscope", Files: map[string]string{"../victim.txt": "x"}, Dirs: []string{".."}})
	if err := os.WriteFile(filepath.Join(dir, OwnershipFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Remove(dir, []string{"../victim.txt", "/etc/hostname"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("a file outside the directory was deleted: %v", err)
	}
}
