package scenarios

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fuzzDeadline bounds one input: far above any real scenario's parse time
// (milliseconds), so that only a hang (or work growing without bound, such
// as an alias bomb) trips it, even on a loaded host.
const fuzzDeadline = 10 * time.Second

// addTestdata seeds f with every scenario in testdata (good and bad), so
// the fuzzer starts from the inputs the golden tests already pin down.
func addTestdata(f *testing.F, pattern string) {
	f.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		f.Fatalf("no %s (err %v)", pattern, err)
	}
	for _, file := range files {
		if fi, err := os.Stat(file); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// within runs fn and fails t if it takes longer than fuzzDeadline.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(fuzzDeadline):
		t.Fatalf("%s did not return within %v", what, fuzzDeadline)
	}
}

// checkPositions fails t unless err is scenario Errors, each of which
// names file and a line and a column.
func checkPositions(t *testing.T, file string, err error) {
	t.Helper()
	es, ok := AsErrors(err)
	if !ok || len(es) == 0 {
		t.Fatalf("rejected without scenario errors (no position): %v", err)
	}
	for _, e := range es {
		if e.Pos.fromSet() {
			continue // a --set error names its setting instead
		}
		if e.Pos.File != file || e.Pos.Line < 1 || e.Pos.Col < 1 {
			t.Errorf("error without file:line:col: %q (pos %+v)", e.Error(), e.Pos)
		}
		if e.Msg == "" {
			t.Errorf("error without a message at %v", e.Pos)
		}
	}
}

// FuzzScenario drives a scenario's text through what valnet validate does
// with a file once it is read (Source.Resolve: YAML syntax, strict decode,
// resolution into a Plan): it must never panic or hang, and every input it
// refuses gets errors that each carry file:line:col.
func FuzzScenario(f *testing.F) {
	addTestdata(f, "testdata/*.yaml")
	for _, name := range builtinNames() {
		data, _ := BuiltinSource(name)
		f.Add(data)
	}
	f.Add(starter)
	f.Fuzz(func(t *testing.T, data []byte) {
		const file = "fuzz.yaml"
		src := &Source{file: file, name: file, dir: "testdata", data: data}
		var (
			plan *Plan
			err  error
		)
		within(t, "Resolve", func() { plan, err = src.Resolve(Overrides{}) })
		if err != nil {
			if plan != nil {
				t.Fatalf("a Plan came back with errors: %v", err)
			}
			checkPositions(t, file, err)
			return
		}
		if plan == nil || len(plan.Validators) == 0 || plan.Name == "" {
			t.Fatalf("accepted without a plan of validators: %+v", plan)
		}
		// What was accepted once is accepted again from the same bytes.
		if _, err := src.Resolve(Overrides{}); err != nil {
			t.Fatalf("accepted, then refused: %v", err)
		}
	})
}
