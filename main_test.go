package main

import (
	"maps"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/cli"
)

// TestCommandLineOrProvider: the command line's verbs, help and version run the command line;
// anything else, -debug included, serves the provider.
func TestCommandLineOrProvider(t *testing.T) {
	for arg, want := range map[string]bool{
		"clusters": true, "diff": true, "render": true, "suggest": true, "query": true,
		"version": true, "--version": true, "-version": true, "help": true, "-h": true, "-help": true, "--help": true,
		"-debug": false, "--debug": false, "": false, "serve": false, "frobnicate": false,
	} {
		if got := cli.IsCommand(arg); got != want {
			t.Errorf("IsCommand(%q) = %v, want %v", arg, got, want)
		}
	}
}

func TestQuietUnreadLogs(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want map[string]string
	}{
		{
			name: "Terraform keeps no provider logs: the SDKs and the provider log nothing",
			env:  map[string]string{"HOME": "/root"},
			want: map[string]string{
				"HOME": "/root", "TF_LOG_PROVIDER_MESHSCOPE": "off",
				"TF_LOG_SDK": "off", "TF_LOG_SDK_PROTO": "off", "TF_LOG_SDK_FRAMEWORK": "off",
			},
		},
		{name: "TF_LOG_PATH set: unchanged", env: map[string]string{"TF_LOG_PATH": "/tmp/tf.log"}, want: map[string]string{"TF_LOG_PATH": "/tmp/tf.log"}},
		{name: "TF_LOG set: unchanged", env: map[string]string{"TF_LOG": "trace"}, want: map[string]string{"TF_LOG": "trace"}},
		{name: "TF_LOG_PROVIDER set: unchanged", env: map[string]string{"TF_LOG_PROVIDER": "debug"}, want: map[string]string{"TF_LOG_PROVIDER": "debug"}},
		{name: "an SDK level set: unchanged", env: map[string]string{"TF_LOG_SDK_FRAMEWORK": "trace"}, want: map[string]string{"TF_LOG_SDK_FRAMEWORK": "trace"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := maps.Clone(tc.env)
			quietUnreadLogs(func(k string) string { return env[k] }, func(k, v string) error { env[k] = v; return nil })
			if !maps.Equal(env, tc.want) {
				t.Errorf("environment = %v, want %v", env, tc.want)
			}
		})
	}
}

func TestTuneGC(t *testing.T) {
	for _, tc := range []struct {
		name           string
		env            map[string]string
		percent, limit int64 // -1: left alone
	}{
		{"nothing set: serving settings", map[string]string{}, servingGCPercent, servingMemoryLimit},
		{"GOGC set: percent left alone", map[string]string{"GOGC": "100"}, -1, servingMemoryLimit},
		{"GOMEMLIMIT set: limit left alone", map[string]string{"GOMEMLIMIT": "512MiB"}, servingGCPercent, -1},
		{"both set: nothing changes", map[string]string{"GOGC": "off", "GOMEMLIMIT": "1GiB"}, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			percent, limit := int64(-1), int64(-1)
			tuneGC(func(k string) string { return tc.env[k] },
				func(p int) int { percent = int64(p); return 100 },
				func(l int64) int64 { limit = l; return 0 })
			if percent != tc.percent || limit != tc.limit {
				t.Errorf("set percent %d, limit %d; want %d, %d", percent, limit, tc.percent, tc.limit)
			}
		})
	}
}
