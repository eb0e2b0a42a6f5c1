package testenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/testenv/xdsprobe"
)

// scripted is a probe that answers with one push after another and then repeats the last.
type scripted struct {
	mu     sync.Mutex
	pushes []xdsprobe.Push
	errs   []error
	looks  int
}

func (s *scripted) Latest(context.Context) (xdsprobe.Push, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := min(s.looks, len(s.pushes)-1)
	s.looks++
	return s.pushes[i], s.errs[i]
}

func (s *scripted) String() string { return "scripted probe" }

func push(seq int, clusters ...string) xdsprobe.Push {
	return xdsprobe.Push{Clusters: clusters, Version: fmt.Sprint(seq), Seq: seq}
}

func TestWaitPushed_WaitsPastAStaleFirstPush(t *testing.T) {
	p := &scripted{
		pushes: []xdsprobe.Push{push(1, "BlackHoleCluster"), {}, push(2, "BlackHoleCluster", "outbound|80||web")},
		errs:   []error{nil, errors.New("connection reset"), nil},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := WaitPushed(ctx, p, Want{Include: []string{"outbound|80||web"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Seq != 2 || p.looks != 3 {
		t.Errorf("returned push %d after %d looks, want push 2 after 3 looks", got.Seq, p.looks)
	}
}

func TestWaitPushed_TimeoutGivesTheLastPush(t *testing.T) {
	p := &scripted{pushes: []xdsprobe.Push{push(7, "a", "c")}, errs: []error{nil}}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := WaitPushed(ctx, p, Exactly([]string{"a", "b"}))
	if err == nil {
		t.Fatal("no error when the push never converges")
	}
	for _, want := range []string{"scripted probe", "2 names, version 7", "missing b", "unexpected c", "a c"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if p.looks < 2 {
		t.Errorf("looked %d times in 500 ms, want a poll", p.looks)
	}
}

func TestWaitPushed_ForeignIstiodFailsAtOnce(t *testing.T) {
	foreign := fmt.Errorf("%w: serves cluster [Kubernetes]", xdsprobe.ErrForeignIstiod)
	p := &scripted{pushes: []xdsprobe.Push{{}}, errs: []error{foreign}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := WaitPushed(ctx, p, Want{})
	if !errors.Is(err, xdsprobe.ErrForeignIstiod) || p.looks != 1 {
		t.Errorf("err = %v after %d looks, want ErrForeignIstiod after one", err, p.looks)
	}
}

func TestWant_Diff(t *testing.T) {
	for _, tc := range []struct {
		want Want
		got  []string
		diff string
	}{
		{Exactly([]string{"b", "a"}), []string{"a", "b"}, ""},
		{Exactly(nil), nil, ""},
		{Exactly(nil), []string{"a"}, "unexpected a"},
		{Want{Include: []string{"a"}, Exclude: []string{"b"}}, []string{"a", "c"}, ""},
		{Want{Include: []string{"a"}, Exclude: []string{"b"}}, []string{"b"}, "lacks a; still holds b"},
		{Exactly([]string{"a"}), []string{"b"}, "missing a; unexpected b"},
	} {
		if got := tc.want.Diff(tc.got); got != tc.diff {
			t.Errorf("%+v.Diff(%v) = %q, want %q", tc.want, tc.got, got, tc.diff)
		}
	}
}
