package scenarios

import (
	"github.com/valnet/valnet/internal/action"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
)

// TestBadServeConfigs checks the messages for each testdata/serve/*.bad.yaml
// against its .bad.want (go test ./scenarios -update rewrites them).
func TestBadServeConfigs(t *testing.T) {
	files, err := filepath.Glob("testdata/serve/*.bad.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/serve/*.bad.yaml (err %v)", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			plan, err := LoadServe(file)
			if err == nil {
				t.Fatalf("decoded without errors: %+v", plan)
			}
			if _, ok := AsErrors(err); !ok {
				t.Fatalf("error is not scenarios.Errors: %v", err)
			}
			checkGolden(t, strings.TrimSuffix(file, ".yaml")+".want", err.Error()+"\n")
		})
	}
}

func TestGoodServeConfigs(t *testing.T) {
	dir := filepath.Join("testdata", "serve")
	ms := time.Millisecond
	tests := []struct {
		file string
		want ServePlan
	}{
		{"empty.good.yaml", ServePlan{CPUScale: 1, Seed: 1}},
		{"text-latency.good.yaml", ServePlan{CPUScale: 1, Seed: 1,
			Latency: &LatencyPlan{Spec: latency.Spec{Dist: latency.Lognormal, P50: 200 * ms, P99: 800 * ms}, Phases: phase.All()}}},
		{"full.good.yaml", ServePlan{Node: "tcp://127.0.0.1:26659", ChainID: "my-chain",
			KeyFile: filepath.Join(dir, "node/config/priv_validator_key.json"), StateFile: "~/valnet/state.json",
			Type: SignerSimulated, Profile: "yubihsm2", CPUScale: 2, Seed: 7,
			Latency: &LatencyPlan{Spec: latency.Spec{Dist: latency.Uniform, Min: 10 * ms, Max: 50 * ms}, Phases: []string{phase.Precommit}},
			Faults: []FaultPlan{
				{Action: action.SignerDelay, At: FaultAt{Height: 100}, Duration: 30 * time.Second, Phases: phase.All(),
					Latency: &LatencyPlan{Spec: latency.Spec{Dist: latency.Uniform, Min: time.Second, Max: 3 * time.Second}, Phases: phase.All()}},
				{Action: action.SignerDrop, At: FaultAt{Height: 120, HasRound: true}, Phases: []string{phase.Precommit}},
				{Action: action.SignerError, At: FaultAt{Height: 150}, Duration: 10 * time.Second, Phases: phase.All()},
			}}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			got, err := LoadServe(path)
			if err != nil {
				t.Fatal(err)
			}
			for i := range got.Faults {
				got.Faults[i].Pos = Pos{} // positions are TestBadServeConfigs' business
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got\n%+v\nwant\n%+v", *got, tc.want)
			}
		})
	}
}

// TestServeMessagesAreTheScenarioDecoders: a value the scenario decoder
// refuses is refused by the serve config with the same message, and an
// unknown key gets the same did-you-mean.
func TestServeMessagesAreTheScenarioDecoders(t *testing.T) {
	scenario := func(t *testing.T, body string) string {
		t.Helper()
		_, err := Parse("s.yaml", []byte("name: x\n"+body))
		if err == nil {
			t.Fatalf("scenario accepted %q", body)
		}
		return err.Error()
	}
	serve := func(t *testing.T, body string) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "s.yaml")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadServe(path)
		if err == nil {
			t.Fatalf("serve config accepted %q", body)
		}
		return err.Error()
	}
	// message cuts "file:line:col: key: " off the one error.
	message := func(s string) string {
		_, rest, _ := strings.Cut(s, ": ")
		_, rest, _ = strings.Cut(rest, ": ")
		return rest
	}
	tests := []struct{ name, scenario, serve, want string }{
		{"a quoted integer", "validators: [{name: v1}]\nrun: {seed: \"5\"}\n", "seed: \"5\"\n", `expected an integer, got "5"`},
		{"a number that is text", "validators: [{name: v1, signer: {cpu_scale: fast}}]\n", "cpu_scale: fast\n", `expected a number, got "fast"`},
		{"a duration without unit", "validators: [{name: v1}]\nfaults: [{action: signer-drop, target: v1, at: {height: 2}, duration: 5}]\n",
			"faults: [{action: signer-drop, at: {height: 2}, duration: 5}]\n", "5 has no unit; write e.g. 200ms"},
		{"an unknown latency parameter", "validators: [{name: v1, signer: {latency: {dist: fixed, value: 1s, mean: 1s}}}]\n",
			"latency: {dist: fixed, value: 1s, mean: 1s}\n", "dist fixed does not take mean (allowed: dist, value, phases)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := scenario(t, tc.scenario), serve(t, tc.serve)
			if message(a) != tc.want || message(b) != tc.want {
				t.Errorf("scenario: %s\nserve:    %s\nwant both: %s", a, b, tc.want)
			}
		})
	}
	if got := serve(t, "latencyy: 1s\n"); !strings.Contains(got, `latencyy: unknown key; did you mean "latency"? (allowed: node, chain_id, key_file,`) {
		t.Errorf("unknown key: %s", got)
	}
}

func TestParseServeFault(t *testing.T) {
	f, err := ParseServeFault("--fault #1", "{action: signer-delay, at: {height: 10}, duration: 20s, latency: 2s, phases: [prevote]}")
	if err != nil {
		t.Fatal(err)
	}
	want := FaultPlan{Action: action.SignerDelay, At: FaultAt{Height: 10}, Duration: 20 * time.Second, Phases: []string{phase.Prevote},
		Latency: &LatencyPlan{Spec: latency.Spec{Dist: latency.Fixed, Value: 2 * time.Second}, Phases: []string{phase.Prevote}},
		Pos:     Pos{File: "--fault #1", Line: 1, Col: 1}}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got %+v\nwant %+v", f, want)
	}
	for text, msg := range map[string]string{
		"signer-drop@10": `--fault #1:1:1: fault: expected a mapping (key: value lines), got "signer-drop@10"`,
		"":               "--fault #1:1:1: fault: empty; write a fault like",
		"{action: signer-outage, at: {height: 3}, duration: 5s}": "--fault #1:1:10: fault.action: signer-outage does not apply to a standalone signer",
		"{action: signer-drop, at: {time: 30s}}":                 "--fault #1:1:28: fault.at.time: unknown key: a standalone signer sees no clock of the chain",
		"{action: signer-drop, at: {height: x}}":                 `--fault #1:1:36: fault.at.height: expected an integer, got "x"`,
	} {
		if _, err := ParseServeFault("--fault #1", text); err == nil || !strings.HasPrefix(err.Error(), msg) {
			t.Errorf("ParseServeFault(%q): %v\nwant it to start %q", text, err, msg)
		}
	}
}
