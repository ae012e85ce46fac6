package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/scenarios"
)

// The runner's table of backends and the scenario schema's list of
// backends are the same set: a backend a scenario may name can be opened.
func TestBackendTableMatchesScenarios(t *testing.T) {
	want := scenarios.Backends()
	slices.Sort(want)
	if got := BackendNames(); !reflect.DeepEqual(got, want) {
		t.Fatalf("runner backends %v, scenario backends %v", got, want)
	}
	if _, err := openBackend(context.Background(), "nope", "x", Options{}); err == nil ||
		!strings.Contains(err.Error(), "allowed: docker, inprocess, process") {
		t.Fatalf("unknown backend: %v", err)
	}
}

// fakeBackend runs nodes in-process and records how the runner drives its
// run-wide abilities; prepareErr is its failure knob.
type fakeBackend struct {
	nodes.InProcess
	prepareErr error
	layout     *nodes.Layout
	released   *int
	started    *int
}

var (
	_ nodes.Preparer = fakeBackend{}
	_ nodes.Releaser = fakeBackend{}
	_ nodes.KeepInfo = fakeBackend{}
)

func (f fakeBackend) Name() string { return "fake" }

func (f fakeBackend) Start(ctx context.Context, spec nodes.Spec) (nodes.Node, error) {
	*f.started++
	return f.InProcess.Start(ctx, spec)
}

func (f fakeBackend) Prepare(_ context.Context, l nodes.Layout) error {
	*f.layout = l
	return f.prepareErr
}

func (f fakeBackend) Release() error { *f.released++; return nil }

func (f fakeBackend) KeepCommand() string { return "fake-cleanup --run x" }

const twoValidatorsYAML = `
name: fake-backend
chain:
  timeouts: {propose: 300ms, prevote: 100ms, precommit: 100ms, commit: 100ms}
run: {heights: 2, max_duration: 2m}
validators:
  - {name: a}
  - {name: b}
`

func TestRunDrivesBackendAbilities(t *testing.T) {
	tests := []struct {
		name       string
		prepareErr error
		wantErr    string
		wantStarts int
	}{
		{"prepared, run, released", nil, "", 2},
		{"a refused layout starts no node and still releases", errors.New("no room for 2 validators"), "no room", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			showLogsOnFailure(t, dir)
			var layout nodes.Layout
			released, started := 0, 0
			fb := fakeBackend{prepareErr: tt.prepareErr, layout: &layout, released: &released, started: &started}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			out, err := Run(ctx, parse(t, twoValidatorsYAML), Options{OutDir: dir, Backend: fb})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(layout, nodes.Layout{Names: []string{"a", "b"}}) {
				t.Errorf("Prepare got %+v", layout)
			}
			if released != 1 {
				t.Errorf("Release called %d times, want 1", released)
			}
			if started != tt.wantStarts {
				t.Errorf("%d nodes started, want %d", started, tt.wantStarts)
			}
			if tt.wantErr != "" {
				return
			}
			if out.Summary.Backend != "fake" {
				t.Errorf("summary backend %q, want the backend's own name", out.Summary.Backend)
			}
			data, err := os.ReadFile(filepath.Join(dir, NetworkFile))
			if err != nil {
				t.Fatal(err)
			}
			var info NetworkInfo
			if err := json.Unmarshal(data, &info); err != nil {
				t.Fatal(err)
			}
			if info.Cleanup != "fake-cleanup --run x" {
				t.Errorf("network.json cleanup %q", info.Cleanup)
			}
		})
	}
}
