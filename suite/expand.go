// Package suite runs several scenarios as one suite (valnet run a.yaml
// b.yaml dir/): each into its own run directory under the suite's, through
// runner.Run as valnet run does (cmd → suite → runner), and writes
// suite.json, one junit.xml and suite.md over all of them.
package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
)

// Entry is one scenario of a suite, resolved and checked.
type Entry struct {
	Arg  string // the argument it came from (a file, a built-in name, a directory)
	Name string // its scenario name
	Plan *scenarios.Plan
}

// Source is the file or built-in the entry's plan came from.
func (e Entry) Source() string { return e.Plan.Source }

// Problem is what is wrong with one scenario of a suite.
type Problem struct {
	Scenario string // the file or name
	Err      error
}

// Problems are every problem of every scenario of a suite: none runs
// while there is one.
type Problems []Problem

func (ps Problems) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of the suite's scenarios cannot run (nothing ran):", len(ps))
	for _, p := range ps {
		msg := strings.ReplaceAll(strings.TrimSpace(p.Err.Error()), "\n", "\n    ")
		fmt.Fprintf(&b, "\n  %s:\n    %s", p.Scenario, msg)
	}
	return b.String()
}

// Files are the scenario files of a directory: its *.yaml and *.yml,
// sorted by name (not its subdirectories).
func Files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, errors.New("no scenario files (*.yaml, *.yml) in it")
	}
	return files, nil
}

// IsSuite says whether args name a suite rather than one scenario: more
// than one argument, or a directory of scenarios.
func IsSuite(args []string) bool {
	if len(args) != 1 {
		return len(args) > 1
	}
	return IsScenarioDir(args[0])
}

// IsScenarioDir says whether path is a directory to read scenario files
// from: a directory whose name is not a scenario file's (x.yaml that is a
// directory is a scenario file that is wrong, and says so).
func IsScenarioDir(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir() && ext != ".yaml" && ext != ".yml"
}

// Expand resolves every scenario args name (files, built-in names, the
// scenario files of directories) with o and checks each as valnet run
// does (runner.Preflight), before anything starts. All problems of all
// of them come back together, as Problems.
func Expand(ctx context.Context, args []string, o scenarios.Overrides) ([]Entry, error) {
	var entries []Entry
	var problems Problems
	add := func(arg string) {
		plan, err := scenarios.ResolveWith(arg, o)
		if err != nil {
			problems = append(problems, Problem{arg, err})
			return
		}
		if ps := runner.Preflight(ctx, plan); len(ps) > 0 {
			problems = append(problems, Problem{arg, ps})
			return
		}
		entries = append(entries, Entry{Arg: arg, Name: plan.Name, Plan: plan})
	}
	for _, arg := range args {
		if IsScenarioDir(arg) {
			files, err := Files(arg)
			if err != nil {
				problems = append(problems, Problem{arg, err})
				continue
			}
			for _, f := range files {
				add(f)
			}
			continue
		}
		add(arg)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	if len(entries) == 0 {
		return nil, errors.New("no scenarios to run")
	}
	return entries, nil
}
