// Command terraform-provider-meshscope serves the meshscope Terraform provider.
// Given one of the subcommands (clusters, render, diff) it runs the command line
// instead: `terraform-provider-meshscope clusters -f PATH --namespace NS --labels k=v`.
package main

import (
	"context"
	"flag"
	"log"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/meshscope/terraform-provider-meshscope/internal/cli"
	"github.com/meshscope/terraform-provider-meshscope/internal/provider"
)

// version is set by the release build (-ldflags "-X main.version=...").
var version = "dev"

// subcommands are the command line verbs; anything else serves the provider.
var subcommands = map[string]bool{
	"clusters": true,
	"diff":     true,
	"render":   true,
}

func main() {
	if len(os.Args) > 1 && subcommands[os.Args[1]] {
		os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}

	var debug bool

	flag.BoolVar(&debug, "debug", false, "set to true to run the provider with support for debuggers like delve")
	flag.Parse()

	opts := providerserver.ServeOpts{
		Address:         "registry.terraform.io/meshscope/meshscope",
		Debug:           debug,
		ProtocolVersion: 6,
	}

	err := providerserver.Serve(context.Background(), provider.New(version), opts)
	if err != nil {
		log.Fatal(err.Error())
	}
}
