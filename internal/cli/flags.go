package cli

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

// newFlagSet returns the flag set of a command whose -h prints header, then its flags.
func newFlagSet(name, header string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, header)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs. ok is false when the command is over: -h printed the usage
// (code is ExitOK) or the flags are bad (ExitUsage).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return ExitOK, false
		}
		return ExitUsage, false
	}
	return ExitOK, true
}

// parseFlagsOnly is parseFlags for a command that takes no arguments but its flags.
func parseFlagsOnly(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if code, ok := parseFlags(fs, args); !ok {
		return code, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected argument %q\n", fs.Arg(0))
		return ExitUsage, false
	}
	return ExitOK, true
}

// checkFiles refuses a command without -f PATH; hint says what to give.
func checkFiles(files []string, stderr io.Writer, hint string) int {
	if len(files) == 0 {
		fmt.Fprintln(stderr, "missing -f PATH: "+hint)
		return ExitUsage
	}
	return ExitOK
}

// checkOutput refuses an -o that is not one of formats.
func checkOutput(out string, stderr io.Writer, formats ...string) int {
	if !slices.Contains(formats, out) {
		fmt.Fprintf(stderr, "output %q is not one of %s\n", out, strings.Join(formats, ", "))
		return ExitUsage
	}
	return ExitOK
}

// addQuietFlag adds --quiet, which turns off the progress reports.
func addQuietFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("quiet", false, "do not report slow steps (over 2s) on stderr")
}

// predictFlags are the flags of the commands that predict a proxy's clusters:
// --istio-version, --domain-suffix and --quiet.
type predictFlags struct {
	version, domainSuffix *string
	quiet                 *bool
}

func addPredictFlags(fs *flag.FlagSet) predictFlags {
	return predictFlags{
		version:      fs.String("istio-version", istioconfig.DefaultVersion, "Istio release whose behaviour to predict, MAJOR.MINOR"),
		domainSuffix: fs.String("domain-suffix", mesh.DefaultDomainSuffix, "cluster domain suffix"),
		quiet:        addQuietFlag(fs),
	}
}

// check validates --domain-suffix, then --istio-version.
func (f predictFlags) check(stderr io.Writer) int {
	if code := checkDomainSuffix(*f.domainSuffix, stderr); code != ExitOK {
		return code
	}
	return checkIstioVersion(*f.version, stderr)
}

// options are the predictor's options the flags give.
func (f predictFlags) options() predict.Options {
	return predict.Options{IstioVersion: *f.version, DomainSuffix: *f.domainSuffix}
}

// scopeOptions are the options of the scopes the flags give.
func (f predictFlags) scopeOptions() scope.Options {
	return scope.Options{DomainSuffix: *f.domainSuffix, IstioVersion: *f.version}
}

// loadInventory validates the flags, then reads the manifests of files as loadInventory does.
func (f predictFlags) loadInventory(files []string, stdin io.Reader, stderr io.Writer) (*mesh.Inventory, progress, int) {
	if code := f.check(stderr); code != ExitOK {
		return nil, progress{}, code
	}
	prog := f.progress(stderr)
	inv, code := loadInventory(files, stdin, stderr, "", prog)
	return inv, prog, code
}

func (f predictFlags) progress(stderr io.Writer) progress {
	return newProgress(stderr, *f.quiet)
}
