package testenv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/testenv/xdsprobe"
)

// PushTimeout is how long a live test waits for istiod to converge: long enough for a machine
// whose cores are all busy, and still a bound.
const PushTimeout = 2 * time.Minute

// pollInterval is how often WaitPushed looks at a probe again.
const pollInterval = 200 * time.Millisecond

// Want is the cluster list a live test waits for istiod to push. Exactly, when not nil, is the
// whole list (sorted); Include must all be in it and Exclude none.
type Want struct {
	Exactly []string
	Include []string
	Exclude []string
}

// Exactly wants exactly these clusters.
func Exactly(clusters []string) Want {
	c := slices.Clone(clusters)
	slices.Sort(c)
	if c == nil {
		c = []string{}
	}
	return Want{Exactly: c}
}

// Holds reports whether a pushed list is what w wants.
func (w Want) Holds(got []string) bool { return w.Diff(got) == "" }

// Diff says how got falls short of w, or "" when it does not.
func (w Want) Diff(got []string) string {
	var parts []string
	if w.Exactly != nil {
		if missing := minus(w.Exactly, got); len(missing) > 0 {
			parts = append(parts, "missing "+strings.Join(missing, " "))
		}
		if extra := minus(got, w.Exactly); len(extra) > 0 {
			parts = append(parts, "unexpected "+strings.Join(extra, " "))
		}
	}
	if missing := minus(w.Include, got); len(missing) > 0 {
		parts = append(parts, "lacks "+strings.Join(missing, " "))
	}
	var present []string
	for _, c := range w.Exclude {
		if slices.Contains(got, c) {
			present = append(present, c)
		}
	}
	if len(present) > 0 {
		parts = append(parts, "still holds "+strings.Join(present, " "))
	}
	return strings.Join(parts, "; ")
}

// WaitPushed polls the probe until the latest push istiod made to its proxy is what want says,
// and returns that push. istiod indexes a new object and debounces its pushes, so a test never
// trusts a first push: on a busy machine it can predate what the test just created. When ctx
// ends first, the error gives the last push seen and how it differs. A probe that reaches a
// foreign istiod fails at once (xdsprobe.ErrForeignIstiod).
func WaitPushed(ctx context.Context, probe xdsprobe.Probe, want Want) (xdsprobe.Push, error) {
	var last xdsprobe.Push
	var lastErr error
	for {
		look, cancel := context.WithTimeout(ctx, 20*time.Second)
		push, err := probe.Latest(look)
		cancel()
		switch {
		case errors.Is(err, xdsprobe.ErrForeignIstiod):
			return push, err
		case err != nil:
			lastErr = err
		default:
			last, lastErr = push, nil
			if want.Holds(push.Clusters) {
				return push, nil
			}
		}
		select {
		case <-ctx.Done():
			if last.Seq == 0 {
				return last, fmt.Errorf("%s: no push: %w (last error: %v)", probe, ctx.Err(), lastErr)
			}
			msg := fmt.Sprintf("%s: %v; the last push (%d names, version %s) %s:\n  %s",
				probe, ctx.Err(), len(last.Clusters), last.Version, want.Diff(last.Clusters), strings.Join(last.Clusters, " "))
			if lastErr != nil {
				msg += fmt.Sprintf("\n  (the last look failed: %v)", lastErr)
			}
			return last, errors.New(msg)
		case <-time.After(pollInterval):
		}
	}
}

// EventuallyPushed is WaitPushed for a test: it waits up to timeout and fails the test with the
// last push seen. It returns the clusters that matched.
func EventuallyPushed(t testing.TB, probe xdsprobe.Probe, want Want, timeout time.Duration) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	push, err := WaitPushed(ctx, probe, want)
	if err != nil {
		t.Fatalf("waiting %s for istiod to converge: %v", timeout, err)
	}
	t.Logf("%s: %d clusters after %s", probe, len(push.Clusters), time.Since(start).Round(100*time.Millisecond))
	return push.Clusters
}

// minus returns the elements of a that are not in b.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
