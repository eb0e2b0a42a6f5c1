package istioconfig

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in       string
		want     Version
		modelled bool
		err      string
	}{
		{"", Version{1, 31}, true, ""},
		{"1.31", Version{1, 31}, true, ""},
		{"1.31.2", Version{1, 31}, true, ""},
		{"1.8", Version{1, 8}, true, ""},
		{"1.22", Version{1, 22}, true, ""},
		{"1.32", Version{1, 32}, false, ""},
		{"1.99", Version{1, 99}, false, ""},
		{"2.0", Version{}, false, `"2.0" is not modelled: meshscope models Istio 1.8 to 1.31`},
		{"1.7", Version{}, false, "models Istio 1.8 to 1.31"},
		{"v1.31", Version{}, false, `without the "v": "1.31"`},
		{"1", Version{}, false, "not a release number"},
		{"1.x", Version{}, false, "not a release number"},
		{"1.31.2.1", Version{}, false, "not a release number"},
		{"1.031", Version{}, false, "not a release number"},
		{"1.-1", Version{}, false, "not a release number"},
		{" 1.31", Version{}, false, "not a release number"},
	} {
		got, err := ParseVersion(tc.in)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseVersion(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
		case err != nil || got != tc.want || got.Modelled() != tc.modelled:
			t.Errorf("ParseVersion(%q) = %v (modelled %v), %v; want %v (modelled %v)", tc.in, got, got.Modelled(), err, tc.want, tc.modelled)
		}
	}
}

// TestSwitches pins each release switch at the release that changed it.
func TestSwitches(t *testing.T) {
	for _, tc := range []struct {
		name  string
		on    func(Version) bool
		first int // the first 1.x release with the new behaviour
	}{
		{"ExternalNameAlias", Version.ExternalNameAlias, 21},
		{"UnifiedInboundPassthrough", Version.UnifiedInboundPassthrough, 23},
		{"UnifiedSidecarScope", Version.UnifiedSidecarScope, 23},
		{"EgressExclusions", Version.EgressExclusions, 31},
	} {
		if tc.on(Version{1, tc.first - 1}) || !tc.on(Version{1, tc.first}) || !tc.on(Version{1, 40}) {
			t.Errorf("%s: want off on 1.%d, on from 1.%d", tc.name, tc.first-1, tc.first)
		}
	}
}

// TestDefaultVersionIsNewest: the release predicted when none is given is the newest modelled
// one, stated once as a string and once as a Version.
func TestDefaultVersionIsNewest(t *testing.T) {
	v, err := ParseVersion(DefaultVersion)
	if err != nil || v != Newest || DefaultVersion != fmt.Sprintf("%d.%d", Newest.Major, Newest.Minor) {
		t.Errorf("DefaultVersion %q parses to %v (%v); Newest is %v", DefaultVersion, v, err, Newest)
	}
}
