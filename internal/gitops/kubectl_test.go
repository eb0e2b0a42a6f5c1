package gitops

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"
)

// kubectlKustomize runs the installed `kubectl kustomize DIR`.
func kubectlKustomize(t *testing.T, dir string) []byte {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed; the in-memory kustomize builds are checked by the golden tests")
	}
	cmd := exec.Command(kubectl, "kustomize", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	return out
}

// The layouts written to disk build with the installed kubectl (kustomize v5.5)
// exactly as they build in memory with the kustomize API meshscope uses.
func TestKubectlKustomizeMatchesInMemory(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			l, probs := Build(tc.in)
			if len(probs) > 0 {
				t.Fatal(probs)
			}
			dir := filepath.Join(t.TempDir(), "layout")
			if _, err := Write(dir, l.Files, nil); err != nil {
				t.Fatal(err)
			}
			dirs := []string{BaseDir}
			for _, env := range sortedKeys(l.Overlays) {
				dirs = append(dirs, l.Overlays[env])
			}
			if _, ok := l.Files[ArgoCDDir+"/"+KustomizationFile]; ok {
				dirs = append(dirs, ArgoCDDir)
			}
			for _, d := range dirs {
				want, err := BuildDir(l.Files, d)
				if err != nil {
					t.Fatal(err)
				}
				if got := kubectlKustomize(t, filepath.Join(dir, d)); !bytes.Equal(got, want) {
					t.Errorf("kubectl kustomize %s:\n%s\nin memory:\n%s", d, got, want)
				}
			}
		})
	}
}
