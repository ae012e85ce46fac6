package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/valnet/valnet/internal/golden"
	"github.com/valnet/valnet/scenarios"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const testScenario = `name: sweep-test
run:
  heights: 3
validators:
  - name: hsm
  - name: v
    count: 3
expect:
  - {metric: missed_precommits, validator: hsm, max: 2}
`

func writeScenario(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sweep-test.yaml")
	writeFile(t, path, testScenario)
	return path
}

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func testConfig(source, out string) Config {
	seed := int64(7)
	return Config{
		Source: source, OutDir: out, Repeat: 2, Seed: &seed,
		Axes: []Axis{
			{Path: "validators[hsm].signer.latency", Values: []string{"100ms", "300ms", "500ms"}},
			{Path: "chain.timeouts.commit", Values: []string{"500ms", "1s"}},
		},
	}
}

func prepare(t *testing.T, cfg Config) *Sweep {
	t.Helper()
	s, err := Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readJSON reads sweep.json back, with the source path made stable.
func readJSON(t *testing.T, dir string) fileJSON {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSweepRunsTheCrossProduct(t *testing.T) {
	src, out := writeScenario(t), t.TempDir()
	s := prepare(t, testConfig(src, out))
	fake := &fakeRunner{}
	var progress bytes.Buffer
	o, err := s.Run(context.Background(), fake, &progress, (&fakeClock{}).now)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Complete() || o.Ran != 12 {
		t.Fatalf("complete %v, ran %d, failed %v", o.Complete(), o.Ran, o.Failed)
	}
	// The first key varies slowest; repeats use seeds 7 and 8 at every point.
	wantFirst := []fakeCall{
		{filepath.Join(out, "latency=100ms,commit=500ms/r1"), 7},
		{filepath.Join(out, "latency=100ms,commit=500ms/r2"), 8},
		{filepath.Join(out, "latency=100ms,commit=1s/r1"), 7},
	}
	if !reflect.DeepEqual(fake.calls[:3], wantFirst) {
		t.Errorf("first calls %v, want %v", fake.calls[:3], wantFirst)
	}
	if last := fake.calls[11]; last.Dir != filepath.Join(out, "latency=500ms,commit=1s/r2") {
		t.Errorf("last call %v", last)
	}
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	if len(lines) != 12 || !strings.HasPrefix(lines[0], "valnet sweep: point 1/6 (set validators[hsm].signer.latency=100ms chain.timeouts.commit=500ms) repeat 1/2, elapsed ") ||
		strings.Contains(lines[0], "left") || !strings.HasSuffix(lines[11], "~10s left") {
		t.Errorf("progress:\n%s", progress.String())
	}

	f := readJSON(t, out)
	if f.Scenario != src || f.Backend != "inprocess" || !reflect.DeepEqual(f.Keys, s.Keys()) || !f.Complete || len(f.Points) != 6 {
		t.Fatalf("sweep.json head: %+v", f.Identity)
	}
	p := f.Points[5] // latency=500ms, commit=1s: seeds 7 and 8
	if p.Set["validators[hsm].signer.latency"] != "500ms" || len(p.Runs) != 2 || p.Runs[1].Seed != 8 || p.Runs[1].Dir != "latency=500ms,commit=1s/r2" {
		t.Errorf("point 6: %+v", p)
	}
	key := "block_interval_p50_ms"
	if p.Min[key] != 1607 || p.Max[key] != 1608 || p.Mean[key] != 1607.5 || p.Runs[0].Metrics["missed_precommits(hsm)"] != 5 {
		t.Errorf("point 6 stats: min %v max %v mean %v", p.Min[key], p.Max[key], p.Mean[key])
	}
	if f.Points[0].ExpectationsHeld != 2 || p.ExpectationsHeld != 0 {
		t.Errorf("expectations held: %d at the first point, %d at the last", f.Points[0].ExpectationsHeld, p.ExpectationsHeld)
	}
	for _, name := range []string{MarkdownFile, CSVFile} {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", name+".golden"), bytes.ReplaceAll(data, []byte(src), []byte("sweep-test.yaml")), *update)
	}
	checkHTML(t, out, len(s.Metrics)*2)
}

// checkHTML checks that sweep.html holds n charts and no chart notes.
func checkHTML(t *testing.T, dir string, n int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	if got := strings.Count(page, "<svg"); got != n {
		t.Errorf("sweep.html has %d charts, want %d", got, n)
	}
	if strings.Contains(page, "could not be drawn") {
		t.Errorf("sweep.html has a failed chart")
	}
}

func TestSweepResumesAfterInterrupt(t *testing.T) {
	src, out := writeScenario(t), t.TempDir()
	cfg := testConfig(src, out)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := &fakeRunner{interruptAt: 4, cancel: cancel}
	o, err := prepare(t, cfg).Run(ctx, fake, &bytes.Buffer{}, (&fakeClock{}).now)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Interrupted || o.Complete() || o.Ran != 3 || len(fake.calls) != 4 {
		t.Fatalf("interrupted %v, ran %d, calls %d", o.Interrupted, o.Ran, len(fake.calls))
	}
	f := readJSON(t, out)
	if f.Complete || f.Points[0].Finished != 2 || f.Points[1].Finished != 1 {
		t.Errorf("sweep.json after the interrupt: complete %v, finished %d %d", f.Complete, f.Points[0].Finished, f.Points[1].Finished)
	}
	md, _ := os.ReadFile(filepath.Join(out, MarkdownFile))
	if !strings.Contains(string(md), "**Incomplete: 3 of 12 runs finished**") {
		t.Errorf("sweep.md does not say it is incomplete:\n%s", md)
	}

	// The same command again does the 9 runs left, the interrupted one first.
	again := &fakeRunner{}
	o, err = prepare(t, cfg).Run(context.Background(), again, &bytes.Buffer{}, (&fakeClock{}).now)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Complete() || o.Resumed != 3 || o.Ran != 9 || len(again.calls) != 9 {
		t.Fatalf("rerun: complete %v, resumed %d, ran %d, calls %d", o.Complete(), o.Resumed, o.Ran, len(again.calls))
	}
	if want := filepath.Join(out, "latency=100ms,commit=1s/r2"); again.calls[0].Dir != want {
		t.Errorf("rerun starts at %s, want %s", again.calls[0].Dir, want)
	}
	if _, err := os.Stat(filepath.Join(out, "latency=100ms,commit=1s/r2"+unfinishedSuffix)); err != nil {
		t.Errorf("the interrupted run was not kept aside: %v", err)
	}
	f = readJSON(t, out)
	if !f.Complete || !f.Points[0].Runs[0].Resumed || f.Points[1].Runs[1].Resumed {
		t.Errorf("sweep.json after resuming: complete %v", f.Complete)
	}
	// A third time, nothing is left to do.
	third := &fakeRunner{}
	if o, err := prepare(t, cfg).Run(context.Background(), third, &bytes.Buffer{}, (&fakeClock{}).now); err != nil || len(third.calls) != 0 || !o.Complete() {
		t.Errorf("third run: %d calls, err %v", len(third.calls), err)
	}
}

func TestSweepGoesOnAfterAFailedRun(t *testing.T) {
	src, out := writeScenario(t), t.TempDir()
	cfg := testConfig(src, out)
	fake := &fakeRunner{failAt: 2}
	o, err := prepare(t, cfg).Run(context.Background(), fake, &bytes.Buffer{}, (&fakeClock{}).now)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Failed) != 1 || o.Complete() || o.Ran != 11 || !strings.Contains(o.Failed[0].Error(), "could not start") {
		t.Fatalf("failed %v, ran %d", o.Failed, o.Ran)
	}
	f := readJSON(t, out)
	if r := f.Points[0].Runs[1]; r.Error == "" || r.Finished() {
		t.Errorf("the failed run in sweep.json: %+v", r)
	}
	again := &fakeRunner{}
	if _, err := prepare(t, cfg).Run(context.Background(), again, &bytes.Buffer{}, (&fakeClock{}).now); err != nil || len(again.calls) != 1 {
		t.Errorf("rerun: %d calls (%v), err %v", len(again.calls), again.calls, err)
	}
}

func TestSweepRefusesAnotherSweepsDirectory(t *testing.T) {
	src, out := writeScenario(t), t.TempDir()
	cfg := testConfig(src, out)
	if _, err := prepare(t, cfg).Run(context.Background(), &fakeRunner{}, &bytes.Buffer{}, (&fakeClock{}).now); err != nil {
		t.Fatal(err)
	}
	other := testConfig(src, out)
	other.Axes[1].Values = []string{"500ms", "2s"}
	_, err := prepare(t, other).Run(context.Background(), &fakeRunner{}, &bytes.Buffer{}, (&fakeClock{}).now)
	if err == nil || !strings.Contains(err.Error(), "holds another sweep (chain.timeouts.commit=500ms,1s, not 500ms,2s)") {
		t.Errorf("resuming into another sweep: %v", err)
	}
	seed := int64(1)
	other = testConfig(src, out)
	other.Seed = &seed
	if _, err := prepare(t, other).Run(context.Background(), &fakeRunner{}, &bytes.Buffer{}, (&fakeClock{}).now); err == nil || !strings.Contains(err.Error(), "base seed 7, not 1") {
		t.Errorf("resuming with another seed: %v", err)
	}
	if err := os.WriteFile(src, []byte(strings.Replace(testScenario, "heights: 3", "heights: 4", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := prepare(t, cfg).Run(context.Background(), &fakeRunner{}, &bytes.Buffer{}, (&fakeClock{}).now); err == nil || !strings.Contains(err.Error(), "the scenario's text changed") {
		t.Errorf("resuming after the scenario changed: %v", err)
	}
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.OutDir = full
	if _, err := prepare(t, cfg).Run(context.Background(), &fakeRunner{}, &bytes.Buffer{}, (&fakeClock{}).now); err == nil || !strings.Contains(err.Error(), "holds no sweep.json") {
		t.Errorf("a directory of something else: %v", err)
	}
}

func TestPrepareReportsEveryProblem(t *testing.T) {
	src := writeScenario(t)
	cfg := Config{Source: src, Repeat: 0, Axes: []Axis{
		{Path: "validators[hsm].signer.latency", Values: []string{"100ms", "fast"}},
		{Path: "run.heights", Values: []string{"3", "-1"}},
	}}
	_, err := Prepare(cfg)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	for _, want := range []string{
		"--repeat 0: give at least 1",
		`--set validators[hsm].signer.latency=fast: "fast" is not a duration`,
		`--set run.heights=-1: must be at least 1`,
	} {
		if strings.Count(msg, want) != 1 {
			t.Errorf("want %q once in:\n%s", want, msg)
		}
	}
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Source: src, Repeat: 1}, "give at least one --set"},
		{Config{Source: src, Repeat: 1, Axes: []Axis{{"run.heights", []string{"3"}}, {"run.heights", []string{"4"}}}}, "given twice"},
		{Config{Source: src, Repeat: 1, Axes: []Axis{{"run.heights", []string{"3", "3"}}}}, "value 3 is listed twice"},
		{Config{Source: src, Repeat: 1, Axes: []Axis{{"run.heights", []string{"3"}}}, Metrics: []string{"missed_precommits(nobody)", "block_time"}},
			`--metric missed_precommits(nobody): no validator named "nobody"`},
		{Config{Source: src, Repeat: 1, Axes: []Axis{{"validators[nobody].count", []string{"3"}}}}, `no validator named "nobody" (the name as written in the file, before count expansion) (allowed: hsm, v)`},
	} {
		if _, err := Prepare(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Prepare: %v, want %q", err, tt.want)
		}
	}
}

func TestDefaultMetrics(t *testing.T) {
	src := writeScenario(t)
	s := prepare(t, Config{Source: src, Repeat: 1, Axes: []Axis{{"validators[v].signer.latency", []string{"1ms"}}}})
	var got []string
	for _, m := range s.Metrics {
		got = append(got, m.String())
	}
	want := []string{"missed_precommits(hsm)", "missed_precommits(v-1)", "missed_precommits(v-2)", "missed_precommits(v-3)", "block_interval_p50_ms", "heights_with_round_change"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("default metrics %v, want %v", got, want)
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		paths  []string
		labels []string
	}{
		{[]string{"validators[hsm].signer.latency", "chain.timeouts.commit"}, []string{"latency", "commit"}},
		{[]string{"validators[hsm].signer.latency", "validators[v].signer.latency"}, []string{"hsm.signer.latency", "v.signer.latency"}},
		{[]string{"network.latency", "validators[v].signer.latency"}, []string{"network.latency", "signer.latency"}},
		{[]string{"run.heights"}, []string{"heights"}},
	}
	for _, tt := range tests {
		axes := make([]Axis, len(tt.paths))
		for i, p := range tt.paths {
			axes[i] = Axis{Path: p}
		}
		if got := axisLabels(axes); !reflect.DeepEqual(got, tt.labels) {
			t.Errorf("axisLabels(%v) = %v, want %v", tt.paths, got, tt.labels)
		}
	}
	taken := map[string]bool{}
	set := []scenarios.Setting{{Path: "network.latency", Value: "{dist: uniform, min: 1ms, max: 5ms}"}}
	first := pointName([]string{"latency"}, set, taken)
	if first != "latency=dist_uniform_min_1ms_max_5ms" {
		t.Errorf("pointName = %q", first)
	}
	taken[first] = true
	set[0].Value = "{dist: uniform; min: 1ms, max: 5ms}"
	if second := pointName([]string{"latency"}, set, taken); second != first+"~2" {
		t.Errorf("a clashing name: %q", second)
	}
}

// Metrics are checked at every point: a setting that expands a validator
// removes its plain name at some points.
func TestMetricsCheckedAtEveryPoint(t *testing.T) {
	cfg := Config{Source: "testdata/slow4.yaml", Repeat: 1,
		Axes: []Axis{{Path: "validators[slow].count", Values: []string{"1", "2"}}}}
	cfg.Metrics = []string{"missed_precommits(slow-2)", "missed_precommits(slow)"}
	s, err := Prepare(cfg)
	if err != nil {
		t.Fatalf("metrics some point has: %v", err)
	}
	want := map[string][]string{"missed_precommits(slow-2)": {"count=1"}, "missed_precommits(slow)": {"count=2"}}
	if !reflect.DeepEqual(s.Absent, want) {
		t.Errorf("absent %v, want %v", s.Absent, want)
	}
	var md strings.Builder
	if err := s.WriteMarkdown(&md, &Outcome{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "- missed_precommits(slow-2) is not a metric of the scenario at count=1") {
		t.Errorf("sweep.md lacks the absence note:\n%s", md.String())
	}

	cfg.Metrics = []string{"missed_precommits(slow-3)"}
	if _, err := Prepare(cfg); err == nil || !strings.Contains(err.Error(), "--metric missed_precommits(slow-3): no validator named") ||
		!strings.Contains(err.Error(), "(at every point)") {
		t.Errorf("a metric no point has: %v", err)
	}

	// Defaults: slow-2 is touched at count=2 only; each default is kept
	// because some point has it.
	cfg.Metrics = nil
	s, err = Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range s.Metrics {
		got = append(got, m.String())
	}
	wantDefaults := []string{"missed_precommits(slow)", "missed_precommits(slow-1)", "missed_precommits(slow-2)", "block_interval_p50_ms", "heights_with_round_change"}
	if !reflect.DeepEqual(got, wantDefaults) {
		t.Errorf("defaults %v, want %v", got, wantDefaults)
	}
}

// The backend is a flag of the whole sweep or search, not a key to vary;
// a bad --backend is a flag error.
func TestBackendFlag(t *testing.T) {
	axes := []Axis{{Path: "run.heights", Values: []string{"3"}}}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Source: "testdata/slow4.yaml", Repeat: 1, Backend: "nope", Axes: axes},
			"--backend nope: unknown backend; allowed: " + strings.Join(scenarios.Backends(), ", ")},
		{Config{Source: "testdata/slow4.yaml", Repeat: 1, Axes: []Axis{{Path: "run.backend", Values: []string{"process", "inprocess"}}}},
			"--set run.backend: the backend is one per sweep or search and is recorded in its identity; choose it with --backend"},
	} {
		_, err := Prepare(tc.cfg)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Prepare: %v, want exactly %q", err, tc.want)
		}
	}
	sp := slow4Spec()
	sp.Backend = "nope"
	if _, err := sp.Prepare(context.Background(), noRuns{t}, io.Discard); err == nil || err.Error() != "--backend nope: unknown backend; allowed: "+strings.Join(scenarios.Backends(), ", ") {
		t.Errorf("threshold --backend nope: %v", err)
	}
	sp = slow4Spec()
	sp.Key = "run.backend"
	if _, err := sp.Prepare(context.Background(), noRuns{t}, io.Discard); err == nil || !strings.Contains(err.Error(), "--vary run.backend: the backend is one per sweep or search") {
		t.Errorf("threshold --vary run.backend: %v", err)
	}
}

// A problem of the scenario at some points (not of a setting) names them.
func TestPointProblemNamesPoint(t *testing.T) {
	_, err := Prepare(Config{Source: "slow-signer", Repeat: 1,
		Axes: []Axis{{Path: "validators[slow].count", Values: []string{"1", "3"}}}})
	want := "at validators[slow].count=3: builtin:slow-signer:"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "count=1") {
		t.Errorf("sweep: %v, want it to start %q", err, want)
	}
	sp := ThresholdSpec{Scenario: "slow-signer", Key: "validators[slow].count", Range: "1..3",
		Target: "block_interval_p50_ms <= 5000", Repeat: 1}
	_, err = sp.Prepare(context.Background(), noRuns{t}, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("threshold: %v, want it to start %q", err, want)
	}
}
