package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// RepoRoot returns the root of the main module, two directories above this
// module's directory (internal/conformance). dir is normally the test's
// working directory (the package directory).
func RepoRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	root := filepath.Dir(filepath.Dir(abs))
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("main module not found two directories above %s: %v", abs, err)
	}
	if !strings.Contains(string(b), "module github.com/meshscope/terraform-provider-meshscope\n") {
		return "", fmt.Errorf("%s/go.mod is not the meshscope main module", root)
	}
	return root, nil
}

// BuildCLI builds the meshscope binary from the main module into outDir.
func BuildCLI(repoRoot, outDir string) (string, error) {
	bin := filepath.Join(outDir, "meshscope")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = repoRoot
	cmd.Env = cliBuildEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("`go build -o %s .` in %s failed: %v\n%s", bin, repoRoot, err, out)
	}
	return bin, nil
}

// cliBuildEnv strips any -mod=... flag from GOFLAGS (e.g. -mod=mod used for this
// module) so building the main module can never rewrite its go.mod/go.sum.
func cliBuildEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "GOFLAGS=") {
			var keep []string
			for _, f := range strings.Fields(strings.TrimPrefix(e, "GOFLAGS=")) {
				if !strings.HasPrefix(f, "-mod=") {
					keep = append(keep, f)
				}
			}
			e = "GOFLAGS=" + strings.Join(keep, " ")
		}
		env = append(env, e)
	}
	return env
}

// CLI runs the meshscope binary.
type CLI struct {
	Bin          string
	IstioVersion string // passed as --istio-version when non-empty
}

// Clusters runs `meshscope clusters -f F... --namespace NS --labels L -o names`
// and returns the printed names. It enforces the output contract: one name per
// line, sorted, nothing else. A name may repeat, as in istiod's output (R32).
func (c CLI) Clusters(files []string, px Proxy) ([]string, error) {
	return c.names([]string{"clusters"}, files, px)
}

// Listeners runs `meshscope proxy-config listener ... -o names` and returns the printed
// names, under the same output contract as Clusters.
func (c CLI) Listeners(files []string, px Proxy) ([]string, error) {
	return c.names([]string{"proxy-config", "listener"}, files, px)
}

// Endpoints runs `meshscope proxy-config endpoint ... -o names` and returns its lines,
// "CLUSTER<TAB>ADDRESS:PORT", under the same output contract as Clusters.
func (c CLI) Endpoints(files []string, px Proxy) ([]string, error) {
	return c.names([]string{"proxy-config", "endpoint"}, files, px)
}

// Routes runs `meshscope proxy-config route ... -o json` and returns its routes as RouteLines
// prints them, sorted.
func (c CLI) Routes(files []string, px Proxy) ([]string, error) {
	out, err := c.run([]string{"proxy-config", "route"}, files, px, "json")
	if err != nil {
		return nil, err
	}
	var doc struct {
		Routes []struct {
			Name         string             `json:"name"`
			VirtualHosts []RouteVirtualHost `json:"virtual_hosts"`
		} `json:"routes"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("proxy-config route -o json: %v", err)
	}
	var lines []string
	for _, r := range doc.Routes {
		lines = append(lines, RouteLines(r.Name, r.VirtualHosts)...)
	}
	sort.Strings(lines)
	return lines, nil
}

// run runs a proxy command of the CLI in the output format and returns its stdout.
func (c CLI) run(command, files []string, px Proxy, format string) ([]byte, error) {
	return c.runExit(command, files, px, format)
}

// runExit is run, for a command whose exit status may be one of ok besides 0.
func (c CLI) runExit(command, files []string, px Proxy, format string, ok ...int) ([]byte, error) {
	args := append([]string(nil), command...)
	for _, f := range files {
		args = append(args, "-f", f)
	}
	args = append(args, "--namespace", px.Namespace)
	if len(px.Labels) > 0 {
		args = append(args, "--labels", LabelString(px.Labels))
	}
	args = append(args, "-o", format)
	if c.IstioVersion != "" {
		args = append(args, "--istio-version", c.IstioVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && slices.Contains(ok, exit.ExitCode()) {
			return stdout.Bytes(), nil
		}
		return nil, fmt.Errorf("%s %s: %v\nstderr:\n%s\nstdout:\n%s", c.Bin, strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.Bytes(), nil
}

// names runs a command of the CLI that prints one name per line for a proxy (for endpoints,
// two fields separated by one tab).
func (c CLI) names(command, files []string, px Proxy) ([]string, error) {
	stdout, err := c.run(command, files, px, "names")
	if err != nil {
		return nil, err
	}
	args := command
	var names []string
	for _, l := range strings.Split(string(stdout), "\n") {
		l = strings.TrimRight(l, "\r")
		if l == "" {
			continue
		}
		bare := l
		if command[len(command)-1] == "endpoint" {
			bare = strings.Replace(l, "\t", "", 1)
		}
		if strings.TrimSpace(l) != l || strings.ContainsAny(bare, " \t") {
			return nil, fmt.Errorf("%s %s: output line %q is not a bare name", c.Bin, strings.Join(args, " "), l)
		}
		names = append(names, l)
	}
	if !sort.StringsAreSorted(names) {
		return nil, fmt.Errorf("%s %s: output is not sorted:\n%s", c.Bin, strings.Join(args, " "), stdout)
	}
	// A name may repeat: istiod does not normalize outbound clusters (R32), and Diff counts
	// the copies.
	return names, nil
}

// Diff returns the names only in a and only in b (both inputs sorted or not), as multisets: a
// name a holds twice and b once is once in onlyA (R32: istiod can build one name twice).
func Diff(a, b []string) (onlyA, onlyB []string) {
	count := map[string]int{}
	for _, x := range a {
		count[x]++
	}
	for _, x := range b {
		count[x]--
	}
	for x, n := range count {
		for ; n > 0; n-- {
			onlyA = append(onlyA, x)
		}
		for ; n < 0; n++ {
			onlyB = append(onlyB, x)
		}
	}
	sort.Strings(onlyA)
	sort.Strings(onlyB)
	return onlyA, onlyB
}

// FormatDiff renders a minimal diff between Istio's and meshscope's names.
func FormatDiff(istio, meshscope []string) string {
	onlyI, onlyM := Diff(istio, meshscope)
	var b strings.Builder
	for _, x := range onlyI {
		fmt.Fprintf(&b, "    only-in-istio:     %s\n", x)
	}
	for _, x := range onlyM {
		fmt.Fprintf(&b, "    only-in-meshscope: %s\n", x)
	}
	return b.String()
}
