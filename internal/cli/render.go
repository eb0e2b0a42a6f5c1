package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/gitops"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

const renderUsage = `Usage: terraform-provider-meshscope render -f PATH [-f PATH ...] --out DIR [--env NAME ...] [--settings FILE] [--check] [--quiet]
       terraform-provider-meshscope render -f PATH [-f PATH ...] --stdout --env NAME [--settings FILE]

Writes the Sidecars of the manifests as a kustomize base with one overlay per
environment (and Argo CD Applications when the settings have argocd), exactly
as the meshscope_kustomize_overlay resource does. Documents that are not
Sidecars are ignored. Only files meshscope wrote are ever rewritten or deleted;
unchanged files are not touched.

The settings file is YAML or JSON with the resource's attributes:
  environments: {NAME: {extra_system_hosts, outbound_traffic_policy, labels, annotations, patches}}
  argocd: {repo_url, target_revision, project, destination_server, path_prefix, namespace, name_prefix, sync_policy}
--env picks environments: those of the settings file, or new ones without changes.
Without --env, every environment of the settings file is rendered.

With --stdout it writes no file: it prints the objects the environment's
overlay builds (kustomize build, in process), YAML only, as an Argo CD Config
Management Plugin's generate command must.

Exit status: 0 written or up to date, 3 --check found DIR out of date, 1 bad input, 2 bad usage.
`

func runRender(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("render", renderUsage+"\nFlags:\n", stderr)
	var files, envs stringList
	fs.Var(&files, "f", "manifest file or directory (repeatable; - reads stdin)")
	fs.Var(&envs, "env", "environment to render (repeatable)")
	out := fs.String("out", "", "directory to write the layout into")
	settingsFile := fs.String("settings", "", "YAML or JSON file with environments and argocd settings")
	check := fs.Bool("check", false, "write nothing; exit 3 when DIR is not what render would write")
	toStdout := fs.Bool("stdout", false, "write nothing; print the objects of the one --env's overlay as YAML")
	quiet := addQuietFlag(fs)
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	if code := checkFiles(files, stderr, "give at least one manifest file or directory"); code != ExitOK {
		return code
	}
	switch {
	case *toStdout && (*out != "" || *check):
		fmt.Fprintln(stderr, "--stdout writes no directory: leave out --out and --check")
		return ExitUsage
	case *toStdout && len(envs) != 1:
		fmt.Fprintf(stderr, "--stdout prints one environment's overlay: give exactly one --env NAME (got %d)\n", len(envs))
		return ExitUsage
	case !*toStdout && *out == "":
		fmt.Fprintln(stderr, "missing --out DIR: give the directory to write, or --stdout to print one environment")
		return ExitUsage
	}

	var settings gitops.Settings
	if *settingsFile != "" {
		s, err := readSettings(*settingsFile)
		if err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return ExitError
		}
		settings = s
	}
	if len(envs) > 0 {
		picked := map[string]gitops.Environment{}
		for _, e := range envs {
			if _, ok := settings.Environments[e]; !ok && *settingsFile != "" {
				fmt.Fprintf(stderr, "error: environment %q is not in %s (it has %s); give one of them, or add it there\n",
					e, *settingsFile, strings.Join(settings.EnvNames(), ", "))
				return ExitError
			}
			picked[e] = settings.Environments[e]
		}
		settings.Environments = picked
	}
	if len(settings.Environments) == 0 {
		fmt.Fprintln(stderr, "no environment: give --env NAME, or a --settings file with environments")
		return ExitUsage
	}

	prog := newProgress(stderr, *quiet)
	start := time.Now()
	sidecars, err := readSidecars(files, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return ExitError
	}
	prog.done(start, "read %d Sidecars", len(sidecars))
	start = time.Now()
	layout, problems := gitops.BuildSidecars(sidecars, settings)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stderr, "error: %s\n", renderProblem(p))
		}
		return ExitError
	}
	prog.done(start, "laid out %d files", len(layout.Files))

	if *toStdout {
		built, err := gitops.BuildOverlay(layout.Files, envs[0])
		if err != nil {
			fmt.Fprintf(stderr, "error: building overlay %s: %v\n", envs[0], err)
			return ExitError
		}
		_, _ = stdout.Write(built)
		return ExitOK
	}

	if *check {
		changes, err := gitops.Diff(*out, layout.Files, nil)
		if err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return ExitError
		}
		if len(changes) == 0 {
			fmt.Fprintf(stdout, "%s is up to date (%d files)\n", *out, len(layout.Files))
			return ExitOK
		}
		fmt.Fprintf(stdout, "%s is out of date:\n", *out)
		for _, c := range changes {
			fmt.Fprintf(stdout, "  %-6s %s\n", c.Action, c.Path)
		}
		fmt.Fprintln(stdout, "run the same render command without --check to update it")
		return ExitChanged
	}

	changes, err := gitops.Write(*out, layout.Files, nil)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return ExitError
	}
	counts := map[gitops.Action]int{}
	for _, c := range changes {
		counts[c.Action]++
		fmt.Fprintf(stdout, "%-6s %s\n", c.Action, c.Path)
	}
	unchanged := len(layout.Files) - counts[gitops.Create] - counts[gitops.Update]
	fmt.Fprintf(stdout, "%s: %d Sidecars, environments %s: %d created, %d updated, %d deleted, %d unchanged\n",
		*out, len(layout.Sidecars), strings.Join(settings.EnvNames(), ", "),
		counts[gitops.Create], counts[gitops.Update], counts[gitops.Delete], unchanged)
	return ExitOK
}

// readSettings reads a settings file; unknown fields are errors.
func readSettings(file string) (gitops.Settings, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return gitops.Settings{}, fmt.Errorf("reading %s: %w", file, err)
	}
	s, err := gitops.ParseSettings(b)
	if err != nil {
		return s, fmt.Errorf("%s: %w (the settings file has environments and argocd, named as the resource's attributes)", file, err)
	}
	return s, nil
}

// readSidecars reads the Sidecars of files, directories (recursively, *.yaml
// and *.yml, in lexical order) and stdin ("-"), skipping other kinds.
func readSidecars(paths []string, stdin io.Reader) ([]*gitops.Sidecar, error) {
	var out []*gitops.Sidecar
	err := mesh.ReadPaths(paths, stdin, func(source string, data []byte) error {
		scs, err := gitops.ParseSidecars(source, data, false)
		out = append(out, scs...)
		return err
	})
	return out, err
}

// renderProblem words a problem for the command line, where sidecars[i] means nothing.
func renderProblem(p gitops.Problem) string {
	if p.Attribute == gitops.AttrSidecars {
		return p.Summary + ": " + p.Detail
	}
	return p.Error()
}
