package gitops

import (
	"errors"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// memRoot is where a layout is put in the in-memory file system.
const memRoot = "/layout"

// BuildOverlay runs kustomize on one environment's overlay of the files, in
// memory, and returns the YAML stream `kubectl kustomize overlays/<env>` prints.
// It never reads the disk or depends on the working directory.
func BuildOverlay(files map[string][]byte, env string) ([]byte, error) {
	return BuildDir(files, OverlayDir(env))
}

// BuildDir runs kustomize in memory on dir, a directory of the files holding a
// kustomization (for example "base" or "argocd").
func BuildDir(files map[string][]byte, dir string) ([]byte, error) {
	fs := filesys.MakeFsInMemory()
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := fs.WriteFile(path.Join(memRoot, p), files[p]); err != nil {
			return nil, err
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, path.Join(memRoot, dir))
	if err != nil {
		// Name the files as the layout does, not by the in-memory root.
		return nil, errors.New(strings.ReplaceAll(err.Error(), memRoot+"/", ""))
	}
	return res.AsYaml()
}
