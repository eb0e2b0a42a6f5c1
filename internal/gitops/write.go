package gitops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// OwnershipFile, in the layout's directory, lists the files meshscope wrote
// with their sha256, and the directories it created. Only those are ever
// rewritten or deleted; every other file in the directory is left alone.
const OwnershipFile = ".meshscope-files.json"

// Ownership is the content of the OwnershipFile.
type Ownership struct {
	// Generator is "meshscope".
	Generator string `json:"generator"`
	// Files maps each owned file (slash-separated, relative) to the sha256 of
	// the content meshscope wrote.
	Files map[string]string `json:"files"`
	// Dirs are the directories meshscope created ("." for the directory
	// itself), removed again when they are empty.
	Dirs []string `json:"dirs,omitempty"`
}

// Action is what writing does to one file.
type Action string

// Actions of a Change.
const (
	Create Action = "create"
	Update Action = "update"
	Delete Action = "delete"
)

// Change is one file that is not as the layout wants it.
type Change struct {
	Path   string
	Action Action
}

// ForeignFilesError reports files in the way of the layout that meshscope does
// not own and that hold other content. Nothing is written.
type ForeignFilesError struct {
	Dir   string
	Paths []string
}

func (e *ForeignFilesError) Error() string {
	return fmt.Sprintf("%s already holds files meshscope did not write, with other content: %s; "+
		"move or delete them, or render into another directory", e.Dir, strings.Join(e.Paths, ", "))
}

// ReadOwnership reads the ownership file of dir. A missing file is an empty ownership.
func ReadOwnership(dir string) (*Ownership, error) {
	o := &Ownership{Generator: "meshscope", Files: map[string]string{}}
	b, err := os.ReadFile(filepath.Join(dir, OwnershipFile))
	if errors.Is(err, fs.ErrNotExist) {
		return o, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, o); err != nil {
		return nil, fmt.Errorf("%s: %w (delete it to start over: meshscope then owns only what it writes next)",
			filepath.Join(dir, OwnershipFile), err)
	}
	if o.Files == nil {
		o.Files = map[string]string{}
	}
	// A hand-edited ownership file must not make meshscope touch anything outside dir.
	for p := range o.Files {
		if !filepath.IsLocal(filepath.FromSlash(p)) || p == OwnershipFile {
			delete(o.Files, p)
		}
	}
	o.Dirs = slices.DeleteFunc(o.Dirs, func(d string) bool { return d != "." && !filepath.IsLocal(filepath.FromSlash(d)) })
	return o, nil
}

// owned returns the owned paths: those of the ownership file and extra (for
// example the `files` of the Terraform state), local ones only, sorted.
func (o *Ownership) owned(extra []string) []string {
	set := map[string]bool{}
	for p := range o.Files {
		set[p] = true
	}
	for _, p := range extra {
		if filepath.IsLocal(filepath.FromSlash(p)) && p != OwnershipFile {
			set[p] = true
		}
	}
	return sortedKeys(set)
}

// Diff says what Write would change in dir to make it hold files: files to
// create, owned files to update (also those edited by hand) and owned files the
// layout no longer has, to delete. extra are more owned paths. A file in the
// way that meshscope does not own is a *ForeignFilesError, unless it already
// holds the wanted content.
func Diff(dir string, files map[string][]byte, extra []string) ([]Change, error) {
	own, err := ReadOwnership(dir)
	if err != nil {
		return nil, err
	}
	owned := own.owned(extra)
	var changes []Change
	var foreign []string
	for _, p := range sortedKeys(files) {
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			return nil, fmt.Errorf("layout path %q is not inside the directory", p)
		}
		cur, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			changes = append(changes, Change{Path: p, Action: Create})
		case err != nil:
			return nil, err
		case bytes.Equal(cur, files[p]):
		case slices.Contains(owned, p):
			changes = append(changes, Change{Path: p, Action: Update})
		default:
			foreign = append(foreign, p)
		}
	}
	if len(foreign) > 0 {
		return changes, &ForeignFilesError{Dir: dir, Paths: foreign}
	}
	for _, p := range owned {
		if _, want := files[p]; want {
			continue
		}
		if st, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); err == nil && st.Mode().IsRegular() {
			changes = append(changes, Change{Path: p, Action: Delete})
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes, nil
}

// Write makes dir hold files: it writes each file that is missing or differs
// (atomically: a temporary file, then a rename), deletes the owned files the
// layout no longer has, and leaves every unchanged file untouched, so its
// modification time stays. Files meshscope does not own are never deleted or
// overwritten. It returns what it changed.
func Write(dir string, files map[string][]byte, extra []string) ([]Change, error) {
	changes, err := Diff(dir, files, extra)
	if err != nil {
		return nil, err
	}
	own, err := ReadOwnership(dir)
	if err != nil {
		return nil, err
	}
	created := map[string]bool{}
	for _, d := range own.Dirs {
		created[d] = true
	}
	for _, c := range changes {
		if c.Action == Delete {
			continue
		}
		if err := mkdirs(dir, filepath.Dir(filepath.FromSlash(c.Path)), created); err != nil {
			return nil, err
		}
		if err := writeAtomic(filepath.Join(dir, filepath.FromSlash(c.Path)), files[c.Path]); err != nil {
			return nil, err
		}
	}
	for _, c := range changes {
		if c.Action != Delete {
			continue
		}
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(c.Path))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if err := mkdirs(dir, ".", created); err != nil {
		return nil, err
	}
	// Directories meshscope created that nothing is left in go again.
	removeEmptyDirs(dir, created, false)

	next := &Ownership{Generator: "meshscope", Files: map[string]string{}, Dirs: sortedKeys(created)}
	for p, b := range files {
		next.Files[p] = Hash(b)
	}
	if err := writeOwnership(dir, next); err != nil {
		return nil, err
	}
	return changes, nil
}

// Remove deletes the files meshscope owns in dir (those of the ownership file
// and extra), the ownership file, and the directories it created once they are
// empty. Everything else stays. It returns the files it deleted.
func Remove(dir string, extra []string) ([]string, error) {
	own, err := ReadOwnership(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, p := range own.owned(extra) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		st, err := os.Lstat(full)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if err := os.Remove(full); err != nil {
			return removed, err
		}
		removed = append(removed, p)
	}
	if err := os.Remove(filepath.Join(dir, OwnershipFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return removed, err
	}
	created := map[string]bool{}
	for _, d := range own.Dirs {
		created[d] = true
	}
	removeEmptyDirs(dir, created, true)
	return removed, nil
}

// Hashes returns the sha256 of each of the files that exists in dir; missing
// files are left out.
func Hashes(dir string, paths []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range paths {
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[p] = Hash(b)
	}
	return out, nil
}

// mkdirs creates rel (relative to dir) and its parents up to and including dir,
// recording in created each one that did not exist.
func mkdirs(dir, rel string, created map[string]bool) error {
	var missing []string
	for r := filepath.Clean(rel); ; r = filepath.Dir(r) {
		if _, err := os.Stat(filepath.Join(dir, r)); errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, r)
		} else if err != nil {
			return err
		}
		if r == "." {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.MkdirAll(filepath.Join(dir, missing[i]), 0o755); err != nil {
			return err
		}
		created[filepath.ToSlash(missing[i])] = true
	}
	return nil
}

// removeEmptyDirs removes the created directories that are empty, deepest
// first, and forgets them. The directory itself (".") only goes with all.
func removeEmptyDirs(dir string, created map[string]bool, all bool) {
	dirs := sortedKeys(created)
	sort.Slice(dirs, func(i, j int) bool {
		if di, dj := strings.Count(dirs[i], "/"), strings.Count(dirs[j], "/"); di != dj {
			return di > dj
		}
		return dirs[i] > dirs[j]
	})
	for _, d := range dirs {
		if d == "." && !all {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(d))
		entries, err := os.ReadDir(full)
		if errors.Is(err, fs.ErrNotExist) {
			delete(created, d)
			continue
		}
		if err != nil || len(entries) > 0 {
			continue
		}
		if os.Remove(full) == nil {
			delete(created, d)
		}
	}
}

func writeOwnership(dir string, o *Ownership) error {
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	p := filepath.Join(dir, OwnershipFile)
	if cur, err := os.ReadFile(p); err == nil && bytes.Equal(cur, b) {
		return nil
	}
	return writeAtomic(p, b)
}

// writeAtomic writes data to a temporary file next to p and renames it over p,
// so that a reader sees the old content or the new, never a part.
func writeAtomic(p string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }() // a no-op once renamed
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}
