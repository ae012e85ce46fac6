package sweep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valnet/valnet/scenarios"
)

// endsAfterOneCheck is a context that ctx.Err() finds live once, then
// cancelled: a Ctrl-C between the loop's check and the run's start.
type endsAfterOneCheck struct {
	context.Context
	checks int
}

func (c *endsAfterOneCheck) Err() error {
	c.checks++
	if c.checks > 1 {
		return context.Canceled
	}
	return nil
}

// The loop's rules, shared by sweep and crosscheck: what finished earlier
// is read back, a setup error is kept even when ctx ended meanwhile (it is
// no interruption), a run that could not be done is counted as failed, and
// an interrupted run ends the loop.
func TestLoopRules(t *testing.T) {
	plan := &scenarios.Plan{Name: "loop", Validators: []scenarios.ValidatorPlan{{Name: "hsm"}}}
	cases := []struct {
		name       string
		dirs       []string // slots' run directories
		blockFile  string   // a regular file where a directory must go (a setup error)
		runner     *fakeRunner
		ctx        func(context.CancelFunc) context.Context
		wantRan    int
		wantFailed []string // substrings, in order
		wantInterr bool
		wantCalls  int
	}{
		{name: "all run", dirs: []string{"a/r1", "a/r2", "b/r1"}, runner: &fakeRunner{}, wantRan: 3, wantCalls: 3},
		{name: "a failed run is counted and the loop goes on", dirs: []string{"a/r1", "a/r2"}, runner: &fakeRunner{failAt: 1},
			wantRan: 1, wantFailed: []string{"a/r1: the fake backend could not start"}, wantCalls: 2},
		{name: "an interrupted run ends the loop", dirs: []string{"a/r1", "a/r2", "a/r3"}, runner: &fakeRunner{interruptAt: 2},
			wantRan: 1, wantInterr: true, wantCalls: 2},
		{name: "a setup error is kept when ctx ends meanwhile", dirs: []string{"blocked/r1", "a/r1"}, blockFile: "blocked",
			runner: &fakeRunner{}, ctx: func(context.CancelFunc) context.Context { return &endsAfterOneCheck{Context: context.Background()} },
			wantFailed: []string{"blocked/r1: "}, wantInterr: true, wantCalls: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tc.runner.cancel = cancel
			var c context.Context = ctx
			if tc.ctx != nil {
				c = tc.ctx(cancel)
			}
			recs := make([]RunRecord, len(tc.dirs))
			var slots []Slot
			for i, d := range tc.dirs {
				recs[i] = RunRecord{Repeat: 1, Result: Result{Seed: int64(i + 1), Dir: d}}
				slots = append(slots, Slot{Rec: &recs[i], Plan: plan, Label: d})
			}
			saves := 0
			var progress strings.Builder
			loop := &Loop{Command: "test", OutDir: out, Runner: tc.runner, Progress: &progress,
				Now: (&fakeClock{}).now, Save: func() error { saves++; return nil }}
			var tally Tally
			todo, err := loop.Resume(slots, &tally)
			if err != nil || todo != len(slots) {
				t.Fatalf("Resume = %d, %v; want %d, nil", todo, err, len(slots))
			}
			// After Resume: made while the run was being set up.
			if tc.blockFile != "" {
				if err := os.WriteFile(filepath.Join(out, tc.blockFile), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := loop.Run(c, slots, todo, &tally); err != nil {
				t.Fatal(err)
			}
			if tally.Ran != tc.wantRan || tally.Interrupted != tc.wantInterr || len(tc.runner.calls) != tc.wantCalls {
				t.Errorf("ran %d interrupted %v calls %d; want %d %v %d\n%s", tally.Ran, tally.Interrupted, len(tc.runner.calls),
					tc.wantRan, tc.wantInterr, tc.wantCalls, progress.String())
			}
			if len(tally.Failed) != len(tc.wantFailed) {
				t.Fatalf("failed %v, want %q", tally.Failed, tc.wantFailed)
			}
			for i, want := range tc.wantFailed {
				if !strings.Contains(tally.Failed[i].Error(), want) {
					t.Errorf("failed[%d] = %v, want it to contain %q", i, tally.Failed[i], want)
				}
			}
			if attempts := tally.Ran + len(tally.Failed) + map[bool]int{true: 1}[tally.Interrupted && tc.blockFile == ""]; saves != attempts {
				t.Errorf("saved %d times, want once per attempt (%d)", saves, attempts)
			}
		})
	}
}

// A second invocation reads back what the first finished and runs only
// the rest; a finished run with another seed is refused; a Finished hook's
// error on a read-back run is the invocation's error.
func TestLoopResumes(t *testing.T) {
	plan := &scenarios.Plan{Name: "loop", Validators: []scenarios.ValidatorPlan{{Name: "hsm"}}}
	out := t.TempDir()
	slotsFor := func(seeds ...int64) ([]Slot, []RunRecord) {
		recs := make([]RunRecord, len(seeds))
		var slots []Slot
		for i, s := range seeds {
			recs[i] = RunRecord{Repeat: i + 1, Result: Result{Seed: s, Dir: filepath.Join("p", "r"+string(rune('1'+i)))}}
			slots = append(slots, Slot{Rec: &recs[i], Plan: plan, Label: recs[i].Dir})
		}
		return slots, recs
	}
	loop := func(r Runner) *Loop {
		return &Loop{Command: "test", OutDir: out, Runner: r, Progress: &strings.Builder{}, Now: (&fakeClock{}).now, Save: func() error { return nil }}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := &fakeRunner{interruptAt: 2, cancel: cancel}
	slots, _ := slotsFor(1, 2, 3)
	var t1 Tally
	todo, _ := loop(first).Resume(slots, &t1)
	if err := loop(first).Run(ctx, slots, todo, &t1); err != nil || t1.Ran != 1 || !t1.Interrupted {
		t.Fatalf("first invocation: %+v, %v", t1, err)
	}

	second := &fakeRunner{}
	slots, recs := slotsFor(1, 2, 3)
	var t2 Tally
	todo, err := loop(second).Resume(slots, &t2)
	if err != nil || todo != 2 || t2.Resumed != 1 || !recs[0].Resumed {
		t.Fatalf("Resume = %d, %v, %+v", todo, err, t2)
	}
	if err := loop(second).Run(context.Background(), slots, todo, &t2); err != nil || t2.Ran != 2 || len(second.calls) != 2 {
		t.Fatalf("second invocation: %+v, %v, calls %v", t2, err, second.calls)
	}

	slots, _ = slotsFor(9, 2, 3)
	if _, err := loop(second).Resume(slots, &Tally{}); err == nil || !strings.Contains(err.Error(), "ran with seed 1, this test gives it seed 9") {
		t.Errorf("another seed: %v", err)
	}
	slots, _ = slotsFor(1, 2, 3)
	slots[0].Finished = func(string) error { return errors.New("no summary") }
	if _, err := loop(second).Resume(slots, &Tally{}); err == nil || !strings.Contains(err.Error(), "reading the earlier run in p/r1: no summary") {
		t.Errorf("a Finished hook's error: %v", err)
	}
}
