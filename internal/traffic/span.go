package traffic

import (
	"context"
	"fmt"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Coverage is how much of the window a live Prometheus really holds: its retention, as it
// reports it (/api/v1/status/runtimeinfo), and the oldest Istio sample in the window. A window
// longer than what the server holds is accepted by Prometheus, and its counts then cover less.
type Coverage struct {
	// Retention is the server's storage retention as it reports it ("15d", "15d or 10GiB"); ""
	// when it does not say (a Prometheus-compatible server without the endpoint).
	Retention string
	// Oldest is the time of the oldest sample of Istio's metrics in the window, found to within a
	// minute (one range query of 60 points, then narrower ones); zero when none was found or it
	// was not checked.
	Oldest time.Time
	// Covered is the span from Oldest to the evaluation time, when shorter than the window; 0
	// when the window is covered, or when it could not be checked (Err says why).
	Covered model.Duration
	// Err is why the span could not be checked; the counts stand, unlabelled.
	Err error
}

// coveragePoints is how many points each of the two range queries that find the oldest sample asks for.
const coveragePoints = 60

// coverageSelector counts the Istio series holding a sample at an instant (within the lookback delta).
const coverageSelector = `count({__name__=~"` + RequestsMetric + `|` + TCPConnectionsMetric + `"})`

// coverage asks the server its retention and the oldest Istio sample in the window ending at now.
func coverage(ctx context.Context, api promv1.API, window model.Duration, now time.Time) Coverage {
	var c Coverage
	if info, err := api.Runtimeinfo(ctx); err == nil {
		c.Retention = info.StorageRetention
	}
	start := now.Add(-time.Duration(window))
	step := max(time.Duration(window)/coveragePoints, time.Second)
	first, err := firstSample(ctx, api, start, now, step)
	if err != nil || first.IsZero() {
		c.Err = err
		return c
	}
	// Refine between the last point without a sample and the first with one, to a minute.
	for first.After(start) && step > time.Minute {
		fine := max(step/coveragePoints, time.Second)
		f, err := firstSample(ctx, api, first.Add(-step), first, fine)
		if err != nil || f.IsZero() {
			break
		}
		first, step = f, fine
	}
	c.Oldest = first
	if first.After(start.Add(time.Minute)) {
		c.Covered = model.Duration(now.Sub(first).Round(time.Minute))
	}
	return c
}

// firstSample is the first instant of a range query over [start, end] at which an Istio series
// holds a sample; zero when none does.
func firstSample(ctx context.Context, api promv1.API, start, end time.Time, step time.Duration) (time.Time, error) {
	val, _, _, err := api.QueryRange(ctx, coverageSelector, promv1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return time.Time{}, err
	}
	m, ok := val.(model.Matrix)
	if !ok {
		return time.Time{}, fmt.Errorf("the range query answered a %s, not a matrix", val.Type())
	}
	var first time.Time
	for _, s := range m {
		if len(s.Values) > 0 {
			if t := s.Values[0].Timestamp.Time(); first.IsZero() || t.Before(first) {
				first = t
			}
		}
	}
	return first, nil
}

// RetentionDuration is the time part of a retention as Prometheus reports it ("15d",
// "15d or 10GiB"); false when it has none (a size only, or nothing).
func RetentionDuration(retention string) (model.Duration, bool) {
	for _, part := range strings.Split(retention, " or ") {
		if d, err := model.ParseDuration(strings.TrimSpace(part)); err == nil && d > 0 {
			return d, true
		}
	}
	return 0, false
}

// Span names the span the counts cover, for "1,204 requests over SPAN": the window, or, when
// Prometheus holds less of it, the span it holds and the window asked for.
func (e *Evidence) Span() string {
	if e.Coverage.Covered == 0 {
		return e.Window
	}
	return fmt.Sprintf("%s (Prometheus holds no older Istio sample; %s asked)", e.Coverage.Covered, e.Window)
}

// Short says the window asked for is longer than what Prometheus holds: its retention is
// shorter, or its oldest Istio sample is younger than the window.
func (e *Evidence) Short() bool {
	if e == nil {
		return false
	}
	if e.Coverage.Covered != 0 {
		return true
	}
	w, err := ParseWindow(e.Window)
	r, ok := RetentionDuration(e.Coverage.Retention)
	return err == nil && ok && r < w
}

// ShortFacts says, for a message, how much less than the window Prometheus holds:
// "Prometheus at URL holds Istio samples from 2026-11-26 07:00 UTC on: 10d2h of the 365d window
// asked for (its retention is 15d); the counts cover that span only". "" when it holds the window.
func (e *Evidence) ShortFacts() string {
	if !e.Short() {
		return ""
	}
	c := e.Coverage
	retention := ""
	if c.Retention != "" {
		retention = " (its retention is " + c.Retention + ")"
	}
	if c.Covered == 0 {
		return fmt.Sprintf("Prometheus at %s keeps samples for %s, less than the %s window asked for: older calls are not counted",
			e.Source, c.Retention, e.Window)
	}
	return fmt.Sprintf("Prometheus at %s holds Istio samples from %s on: %s of the %s window asked for%s; the counts cover that span only",
		e.Source, c.Oldest.UTC().Format("2006-01-02 15:04 MST"), c.Covered, e.Window, retention)
}
