package sweep

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/valnet/valnet/scenarios"
)

// docsWithThresholds are the files whose valnet threshold commands are
// checked: the docs, and the built-ins that show one in their comment.
var docsWithThresholds = []string{"../docs/threshold.md", "../docs/capacity.md", "../scenarios/builtin/capacity-hsm.yaml", "../docs/sim.md"}

// TestThresholdDocExamples checks that every valnet threshold command in
// docsWithThresholds is accepted as it is written: its key, range, target
// and scenario pass every check made before a run.
func TestThresholdDocExamples(t *testing.T) {
	n := 0
	for _, file := range docsWithThresholds {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for i := 0; i < len(lines); i++ {
			line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), "#"))
			line = strings.TrimPrefix(line, "$ ")
			if !strings.HasPrefix(line, "valnet threshold ") || strings.Contains(line, "SCENARIO") {
				continue
			}
			for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
				i++
				line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), "#"))
			}
			n++
			args := shellWords(t, line)[2:]
			t.Run(filepath.Base(file)+"/"+strings.Join(args, " "), func(t *testing.T) {
				sp := thresholdSpecOf(t, args)
				sp.OutDir = filepath.Join(t.TempDir(), "out")
				if _, err := sp.Prepare(context.Background(), &fakeRunner{}, io.Discard); err != nil {
					t.Errorf("the example is refused: %v", err)
				}
			})
		}
	}
	if n < 3 {
		t.Fatalf("found %d threshold commands in %v", n, docsWithThresholds)
	}
}

// thresholdSpecOf reads valnet threshold's arguments as the command does.
func thresholdSpecOf(t *testing.T, args []string) ThresholdSpec {
	t.Helper()
	sp := ThresholdSpec{Scenario: args[0], Repeat: 1}
	if _, err := os.Stat(filepath.Join("..", sp.Scenario)); err == nil {
		sp.Scenario = filepath.Join("..", sp.Scenario)
	}
	for i := 1; i+1 < len(args); i += 2 {
		v := args[i+1]
		switch args[i] {
		case "--vary":
			sp.Key = v
		case "--range":
			sp.Range = v
		case "--target":
			sp.Target = v
		case "--resolution":
			sp.Resolution = v
		case "--direction":
			sp.Direction = v
		case "--repeat":
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			sp.Repeat = n
		case "--out", "--backend", "--seed", "--confirm":
		default:
			t.Fatalf("flag %s is not known to this test", args[i])
		}
	}
	return sp
}

// A value threshold.md shows for a key is written in scenario syntax.
func TestThresholdDocValues(t *testing.T) {
	data, err := os.ReadFile("../docs/threshold.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := scenarios.ReadSource("testdata/slow4.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"network.bandwidth"} {
		_, after, ok := strings.Cut(string(data), "`"+key+"` is written with its unit, `")
		if !ok {
			t.Fatalf("threshold.md does not show a %s value", key)
		}
		value, _, _ := strings.Cut(after, "`")
		if _, err := src.Resolve(scenarios.Overrides{Set: []scenarios.Setting{{Path: key, Value: value}}}); err != nil {
			t.Errorf("threshold.md writes %s as %q: %v", key, value, err)
		}
	}
}
