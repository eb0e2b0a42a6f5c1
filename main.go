// Command terraform-provider-meshscope serves the meshscope Terraform provider. Given a command of the
// command line (internal/cli holds the one list), it runs that instead:
// `terraform-provider-meshscope clusters -f PATH --namespace NS --labels k=v`.
package main

import (
	"flag"
	"log"
	"os"
	"runtime/debug"
	"slices"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/meshscope/terraform-provider-meshscope/internal/cli"
	"github.com/meshscope/terraform-provider-meshscope/internal/provider"
)

// version is set by the release build (-ldflags "-X main.version=...").
var version = "dev"

// atExit runs when the provider stops serving; a profiling build (main_pprof.go)
// sets it.
var atExit = func() {}

func main() {
	if len(os.Args) > 1 && cli.IsCommand(os.Args[1]) {
		os.Exit(cli.Run(version, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}

	quietUnreadLogs(os.Getenv, os.Setenv)
	tuneGC(os.Getenv, debug.SetGCPercent, debug.SetMemoryLimit)

	var debug bool

	flag.BoolVar(&debug, "debug", false, "set to true to run the provider with support for debuggers like delve")
	flag.Parse()

	var opts []tf6server.ServeOpt
	if debug {
		opts = append(opts, tf6server.WithManagedDebug())
	}
	serve := provider.Serve(provider.New(version))
	err := tf6server.Serve("registry.terraform.io/meshscope/meshscope", func() tfprotov6.ProviderServer {
		s, err := serve()
		if err != nil {
			log.Fatal(err.Error())
		}
		return s
	}, opts...)
	atExit()
	if err != nil {
		log.Fatal(err.Error())
	}
}

// terraformLogSettings are the variables with which Terraform decides what it
// logs and keeps; sdkLogSettings those with which the plugin SDKs decide what the
// provider writes ("TF_LOG_PROVIDER_MESHSCOPE" is this provider's own).
var (
	terraformLogSettings = []string{"TF_LOG", "TF_LOG_PATH", "TF_LOG_CORE", "TF_LOG_PROVIDER"}
	sdkLogSettings       = []string{"TF_LOG_PROVIDER_MESHSCOPE", "TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK"}
)

// quietUnreadLogs turns off the SDK's and the provider's logs when Terraform
// discards them anyway. The plugin SDKs log at trace level unless told
// otherwise, and Terraform parses every line the provider writes even when,
// with none of the variables above set, it keeps none of them: over a plan of
// a thousand scopes that costs about a third of the CPU of both processes.
// With any of them set, logging is left as the user asked for it.
func quietUnreadLogs(getenv func(string) string, setenv func(string, string) error) {
	for _, v := range append(slices.Clone(terraformLogSettings), sdkLogSettings...) {
		if getenv(v) != "" {
			return
		}
	}
	for _, v := range sdkLogSettings {
		_ = setenv(v, "off")
	}
}
