package scenarios

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"github.com/valnet/valnet/internal/action"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
)

var update = flag.Bool("update", false, "rewrite golden files (testdata/*.bad.want, the metrics table in docs/scenario.md)")

// checkGolden compares the errors got with the golden file, or rewrites it
// with -update.
func checkGolden(t *testing.T, wantFile, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(wantFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(wantFile)
	if err != nil {
		t.Fatalf("%v (run go test ./scenarios -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("errors differ from %s\n--- got:\n%s--- want:\n%s", wantFile, got, want)
	}
}

// generatedBad are bad scenarios too big to commit: each is written by the
// test under the name given (in a temporary directory, so messages name it
// testdata/NAME.bad.yaml as if it were there) and checked against its
// testdata/NAME.bad.want like the files.
var generatedBad = map[string]func() []byte{
	// 10 MB: a scenario with a description of 10 MiB.
	"generated-10mb": func() []byte {
		return []byte("name: ten-megabytes\nvalidators:\n  - name: a\ndescription: " + strings.Repeat("x", 10<<20) + "\n")
	},
	// 100,000 validators, each written out (1.7 MB).
	"generated-100k-validators": func() []byte {
		var b bytes.Buffer
		b.WriteString("name: many-validators\nvalidators:\n")
		for i := range 100_000 {
			fmt.Fprintf(&b, "  - name: v%d\n", i)
		}
		return b.Bytes()
	},
}

// badDeadline bounds how long any bad scenario may take to be refused:
// far above what any takes (the 100,000 validators, the slowest, take
// about a second on a loaded host), so only a hang or runaway work trips it.
const badDeadline = 20 * time.Second

// TestBadScenarios checks the exact messages for each testdata/*.bad.yaml
// (and each generatedBad) against its .bad.want file, and that each is
// refused within badDeadline. Run `go test ./scenarios -update` to rewrite
// them after an intended change, and read the diff.
func TestBadScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.bad.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.bad.yaml (err %v)", err)
	}
	gen := t.TempDir()
	for name := range generatedBad {
		files = append(files, filepath.Join(gen, name+".bad.yaml"))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".bad.yaml")
		wantFile := filepath.Join("testdata", name+".bad.want")
		t.Run(name, func(t *testing.T) {
			if generate, ok := generatedBad[name]; ok {
				if err := os.WriteFile(file, generate(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var (
				plan *Plan
				err  error
			)
			start := time.Now()
			within(t, "Load", func() { plan, err = Load(file) })
			if took := time.Since(start); took > badDeadline {
				t.Errorf("took %v to refuse", took)
			}
			if err == nil {
				t.Fatalf("parsed without errors: %+v", plan)
			}
			if plan != nil {
				t.Errorf("a Plan came back with errors")
			}
			es, ok := AsErrors(err)
			if !ok {
				t.Fatalf("error is not scenarios.Errors: %v", err)
			}
			for i, e := range es {
				if e.Pos.File != file || e.Pos.Line < 1 || e.Pos.Col < 1 {
					t.Errorf("error without file:line:col: %v", e)
				}
				if i > 0 {
					a, b := es[i-1].Pos, e.Pos
					if a.Line > b.Line || a.Line == b.Line && a.Col > b.Col {
						t.Errorf("errors not sorted: %v before %v", es[i-1], e)
					}
				}
			}
			got := strings.ReplaceAll(err.Error(), gen+string(filepath.Separator), "testdata/")
			checkGolden(t, wantFile, got+"\n")
		})
	}
	// A .want without its .yaml would be a test that silently stopped running.
	wants, _ := filepath.Glob("testdata/*.bad.want")
	for _, w := range wants {
		if _, gen := generatedBad[strings.TrimSuffix(filepath.Base(w), ".bad.want")]; gen {
			continue
		}
		if _, err := os.Stat(strings.TrimSuffix(w, ".want") + ".yaml"); err != nil {
			t.Errorf("%s has no .yaml beside it", w)
		}
	}
	if n := len(files); n < 60 {
		t.Errorf("%d bad scenarios; the corpus keeps at least 60", n)
	}
}

// Found by FuzzScenario's seeds (and an alias bomb written for it): the
// decoder followed every alias, so a few KB of nested aliases in the
// schema's shape (faults of groups of names) expanded to a billion values,
// held the decoder for as long and its memory grew with them. Both bombs
// are refused at once, allocating little.
func TestAliasBombsAreRefusedFast(t *testing.T) {
	for _, file := range []string{"testdata/billion-laughs.bad.yaml", "testdata/billion-laughs-classic.bad.yaml"} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			var err error
			within(t, "Load", func() { _, err = Load(file) })
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("accepted")
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("refused in %v, %d MB allocated", took, alloc>>20)
			if took > 5*time.Second {
				t.Errorf("took %v (want well under 5s)", took)
			}
			if alloc > 256<<20 {
				t.Errorf("allocated %d MB (want well under 256 MB)", alloc>>20)
			}
		})
	}
}

// A line search for the syntax error over a big file used to parse every
// prefix of it: an error near the top of a 10 MB file took minutes. The
// file is refused by its size now, and under it the search is bounded.
func TestSyntaxErrorInABigFileIsQuick(t *testing.T) {
	data := []byte("name: big\nvalidators:\n  - name: a\nrun: {heights: [\n" + strings.Repeat("# "+strings.Repeat("x", 998)+"\n", 1990))
	start := time.Now()
	var err error
	within(t, "Parse", func() { _, err = Parse("big.yaml", data) })
	if err == nil || !strings.Contains(err.Error(), "YAML syntax error") {
		t.Fatalf("got %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v", took)
	}
}

// goodChecks holds extra checks on the resolved plan of some good files.
var goodChecks = map[string]func(t *testing.T, p *Plan){
	"app": func(t *testing.T, p *Plan) {
		want := &AppPlan{Command: []string{"testdata/bin/my-app", "start", "--addr={addr}", "--home", "{home}"}, Transport: AppSocket}
		if !reflect.DeepEqual(p.App, want) {
			t.Errorf("app %+v, want %+v (a path with a slash is the scenario's; transport defaults to socket)", p.App, want)
		}
	},
	"minimal": func(t *testing.T, p *Plan) {
		want := &Plan{
			Name:    "minimal",
			Source:  "testdata/minimal.good.yaml",
			ChainID: "valnet-minimal",
			Timeouts: Timeouts{
				Propose: 3 * time.Second, ProposeDelta: 500 * time.Millisecond,
				Prevote: time.Second, PrevoteDelta: 500 * time.Millisecond,
				Precommit: time.Second, PrecommitDelta: 500 * time.Millisecond,
				Commit: time.Second,
			},
			Run:        RunPlan{Backend: "inprocess", Heights: 20, MaxDuration: 10 * time.Minute, Seed: 1},
			Validators: []ValidatorPlan{{Name: "v1", Power: 10, Signer: SignerPlan{Type: "local", KeyType: "ed25519", Via: "direct", CPUScale: 1}}},
			Network:    NetworkPlan{Topology: TopologyPlan{Kind: TopologyMesh}},
		}
		if !bytes.Contains(p.Text, []byte("name: minimal")) {
			t.Errorf("plan does not keep the scenario text: %q", p.Text)
		}
		want.Text = p.Text
		want.validatorGroups = map[string]string{}
		// valnet's own expectation, which every scenario that names no sign
		// error metric gets.
		zero := 0.0
		want.Expect = []Expectation{{Metric: MetricSignErrorsUnexplained, Max: &zero, Default: true}}
		if !reflect.DeepEqual(p, want) {
			t.Errorf("defaults:\n got %+v\nwant %+v", p, want)
		}
		if p.NeedsFabric() {
			t.Errorf("a scenario without network or network faults needs no fabric")
		}
	},
	"count": func(t *testing.T, p *Plan) {
		var names []string
		for _, v := range p.Validators {
			names = append(names, fmt.Sprintf("%s/%d", v.Name, v.Power))
		}
		want := "v-1/10 v-2/10 v-3/10 solo/10 big-1/25 big-2/25 one/10"
		if got := strings.Join(names, " "); got != want {
			t.Errorf("expanded validators: got %s, want %s", got, want)
		}
		a, b := p.Validators[0].Signer.Latency, p.Validators[1].Signer.Latency
		if a == nil || a == b || &a.Phases[0] == &b.Phases[0] {
			t.Errorf("expanded validators share one latency model")
		}
	},
	"latency": func(t *testing.T, p *Plan) {
		all := []string{"proposal", "prevote", "precommit"}
		want := map[string]*LatencyPlan{
			"short":     {Spec: latency.Spec{Dist: latency.Fixed, Value: 200 * time.Millisecond}, Phases: all},
			"zero":      {Spec: latency.Spec{Dist: latency.Fixed, Value: 0}, Phases: all},
			"fixed":     {Spec: latency.Spec{Dist: latency.Fixed, Value: 1500 * time.Millisecond}, Phases: []string{"precommit"}},
			"uniform":   {Spec: latency.Spec{Dist: latency.Uniform, Min: 100 * time.Millisecond, Max: 300 * time.Millisecond}, Phases: all},
			"equal":     {Spec: latency.Spec{Dist: latency.Uniform, Min: time.Second, Max: time.Second}, Phases: all},
			"normal":    {Spec: latency.Spec{Dist: latency.Normal, Mean: 200 * time.Millisecond, Stddev: 30 * time.Millisecond}, Phases: []string{"prevote", "precommit"}},
			"lognormal": {Spec: latency.Spec{Dist: latency.Lognormal, P50: 200 * time.Millisecond, P99: 800 * time.Millisecond}, Phases: all},
			"none":      nil,
		}
		for _, v := range p.Validators {
			w, ok := want[v.Name]
			if !ok {
				t.Errorf("unexpected validator %s", v.Name)
				continue
			}
			if !reflect.DeepEqual(v.Signer.Latency, w) {
				t.Errorf("%s: latency\n got %+v\nwant %+v", v.Name, v.Signer.Latency, w)
			}
		}
	},
	"node-config": func(t *testing.T, p *Plan) {
		if p.VoteExtensionsEnableHeight != 2 || p.Node.Version != "v0.38" || p.Node.Binary != filepath.Join("testdata", "bin", "cometbft") {
			t.Errorf("chain/node: %d %+v", p.VoteExtensionsEnableHeight, p.Node)
		}
		keys := func(np NodePlan) map[string]any {
			m := map[string]any{}
			for _, s := range np.Config {
				m[s.Key] = s.Value
			}
			return m
		}
		top := map[string]any{"p2p.send_rate": int64(10240000), "mempool.size": int64(10000), "mempool.recheck": false,
			"p2p.seeds": "", "statesync.rpc_servers": []any{"a", "b"}}
		if got := keys(p.Node); !reflect.DeepEqual(got, top) {
			t.Errorf("top-level config %v, want %v", got, top)
		}
		v := keys(p.Validators[0].Node)
		if v["p2p.send_rate"] != int64(20480000) || v["consensus.peer_gossip_sleep_duration"] != "50ms" || v["mempool.size"] != int64(10000) {
			t.Errorf("v's config %v: its own over the top level's", v)
		}
		if p.Validators[0].Signer.Dialect != "v0.38" || p.Validators[1].Signer.Dialect != "" {
			t.Errorf("dialects %q %q", p.Validators[0].Signer.Dialect, p.Validators[1].Signer.Dialect)
		}
		if !reflect.DeepEqual(keys(p.Validators[1].Node), top) {
			t.Errorf("w's config: the top level's, got %v", keys(p.Validators[1].Node))
		}
	},
	"full": func(t *testing.T, p *Plan) {
		if p.ChainID != "custom-chain" || p.Description != "line one\nline two" {
			t.Errorf("chain ID %q, description %q", p.ChainID, p.Description)
		}
		if p.Timeouts.Propose != 1500*time.Millisecond || p.Timeouts.Commit != 0 || p.Timeouts.PrevoteDelta != 0 || p.Timeouts.Precommit != time.Second {
			t.Errorf("timeouts %+v", p.Timeouts)
		}
		if p.Run != (RunPlan{Backend: "inprocess", Heights: 5, MaxDuration: 90 * time.Second, Seed: -7}) {
			t.Errorf("run %+v", p.Run)
		}
		if len(p.Expect) != 4 || !p.Expect[3].Default || p.Expect[3].Metric != MetricSignErrorsUnexplained {
			t.Fatalf("expect: %+v", p.Expect)
		}
		e := p.Expect[2]
		if e.Metric != "sign_latency_p99_ms" || e.Validator != "slow" || e.Phase != "precommit" ||
			e.Min == nil || *e.Min != 0.5 || e.Max == nil || *e.Max != 300 ||
			e.Pos != (Pos{File: "testdata/full.good.yaml", Line: 33, Col: 5}) {
			t.Errorf("expect[2] = %+v (min %v max %v)", e, e.Min, e.Max)
		}
		if p.Expect[0].Max != nil || p.Expect[1].Min != nil {
			t.Errorf("unset bounds should stay nil: %+v", p.Expect[:2])
		}
	},
	"keyfile": func(t *testing.T, p *Plan) {
		want := map[string]SignerPlan{
			"env": {Type: SignerKeyfile, KeyType: KeyEd25519, Via: ViaDirect, CPUScale: 1,
				Keyfile: &KeyfilePlan{Decrypt: DecryptEverySign, BcryptCost: 12, PassphraseEnv: "VALNET_PASSPHRASE"}},
			"file": {Type: SignerKeyfile, KeyType: KeySecp256k1, Via: ViaUnix, CPUScale: 2.5,
				Latency: &LatencyPlan{Spec: latency.Spec{Dist: latency.Fixed, Value: 50 * time.Millisecond}, Phases: phase.All()},
				Keyfile: &KeyfilePlan{Path: filepath.Join("testdata", "keys", "file.armor"), Decrypt: DecryptOnce, BcryptCost: 10,
					PassphraseFile: filepath.Join("testdata", "secrets", "pass.txt")}},
			"abs-1": {Type: SignerKeyfile, KeyType: KeyEd25519, Via: ViaTCP, CPUScale: 1,
				Keyfile: &KeyfilePlan{Decrypt: DecryptEverySign, BcryptCost: 12, PassphraseFile: "/run/secrets/valnet"}},
		}
		want["abs-2"] = want["abs-1"]
		checkSigners(t, p, want)
		if p.Validators[2].Signer.Keyfile == p.Validators[3].Signer.Keyfile {
			t.Errorf("expanded validators share one KeyfilePlan")
		}
	},
	"signers": func(t *testing.T, p *Plan) {
		checkSigners(t, p, map[string]SignerPlan{
			"plain": {Type: SignerLocal, KeyType: KeyEd25519, Via: ViaDirect, CPUScale: 1},
			"secp":  {Type: SignerLocal, KeyType: KeySecp256k1, Via: ViaDirect, CPUScale: 1},
			"tcp":   {Type: SignerLocal, KeyType: KeyEd25519, Via: ViaTCP, CPUScale: 10},
			"unix":  {Type: SignerLocal, KeyType: KeyEd25519, Via: ViaUnix, CPUScale: 0.5},
		})
	},
	"simulated": func(t *testing.T, p *Plan) {
		checkSigners(t, p, map[string]SignerPlan{
			"hsm":      {Type: SignerSimulated, KeyType: KeyEd25519, Via: ViaDirect, CPUScale: 1, Profile: "yubihsm2"},
			"custom-1": {Type: SignerSimulated, KeyType: KeySecp256k1, Via: ViaTCP, CPUScale: 1, Profile: "my-hsm"},
			"custom-2": {Type: SignerSimulated, KeyType: KeySecp256k1, Via: ViaTCP, CPUScale: 1, Profile: "my-hsm"},
			"table": {Type: SignerSimulated, KeyType: KeyEd25519, Via: ViaDirect, CPUScale: 10, Profile: "my-table",
				Latency: &LatencyPlan{Spec: latency.Spec{Dist: latency.Fixed, Value: 10 * time.Millisecond}, Phases: phase.All()}},
		})
		want := map[string]ProfilePlan{
			"my-table": {Name: "my-table", Description: "a table by payload size", Source: "lab measurement 2026-10",
				ByPayload: []PayloadPoint{{32, 105 * time.Millisecond}, {1024, 353 * time.Millisecond}, {4096, time.Second}}},
			"my-hsm": {Name: "my-hsm", Latency: &LatencyPlan{Spec: latency.Spec{Dist: latency.Lognormal, P50: 120 * time.Millisecond, P99: 300 * time.Millisecond}, Phases: phase.All()}},
			"unused": {Name: "unused", Latency: &LatencyPlan{Spec: latency.Spec{Dist: latency.Fixed, Value: 20 * time.Millisecond}, Phases: phase.All()}},
		}
		if !reflect.DeepEqual(p.Profiles, want) {
			t.Errorf("profiles:\n got %+v\nwant %+v", p.Profiles, want)
		}
		table := p.Profiles["my-table"].ByPayload
		if !slices.IsSortedFunc(table, func(a, b PayloadPoint) int { return a.Bytes - b.Bytes }) {
			t.Errorf("by_payload table not sorted: %+v", table)
		}
	},
	"faults": func(t *testing.T, p *Plan) {
		all := phase.All()
		file := "testdata/faults.good.yaml"
		want := []FaultPlan{
			{Action: action.SignerDelay, Target: "v-1", At: FaultAt{Height: 10}, Duration: 20 * time.Second,
				Latency: &LatencyPlan{Spec: latency.Spec{Dist: latency.Fixed, Value: 2 * time.Second}, Phases: []string{"precommit"}},
				Phases:  []string{"precommit"}, Pos: Pos{file, 14, 5}},
			{Action: action.SignerDelay, Target: "v-2", At: FaultAt{Time: 30 * time.Second},
				Latency: &LatencyPlan{Spec: latency.Spec{Dist: latency.Uniform, Min: time.Second, Max: 3 * time.Second}, Phases: all},
				Phases:  all, Pos: Pos{file, 15, 5}},
			{Action: action.SignerDrop, Target: "v-2", At: FaultAt{Height: 5, Round: 0, HasRound: true}, Phases: []string{"prevote", "precommit"}, Pos: Pos{file, 19, 5}},
			{Action: action.SignerDrop, Target: "v-1", At: FaultAt{Time: time.Minute}, Duration: 10 * time.Second, Phases: all, Pos: Pos{file, 20, 5}},
			{Action: action.SignerError, Target: "v-1", At: FaultAt{Height: 7}, Phases: all, Pos: Pos{file, 21, 5}},
			{Action: action.SignerError, Target: "sock", At: FaultAt{Time: 30 * time.Second}, Duration: 10 * time.Second, Phases: all, Pos: Pos{file, 22, 5}},
			{Action: action.SignerOutage, Target: "remote", At: FaultAt{Height: 12}, Duration: 15 * time.Second, Pos: Pos{file, 23, 5}},
			{Action: action.SignerRestart, Target: "sock", At: FaultAt{Height: 8}, Pos: Pos{file, 24, 5}},
			{Action: action.SignerRestart, Target: "remote", At: FaultAt{Time: 2 * time.Minute}, Duration: 5 * time.Second, Pos: Pos{file, 25, 5}},
		}
		if len(p.Faults) != len(want) {
			t.Fatalf("got %d faults, want %d: %+v", len(p.Faults), len(want), p.Faults)
		}
		for i := range want {
			if !reflect.DeepEqual(p.Faults[i], want[i]) {
				t.Errorf("faults[%d]:\n got %+v\nwant %+v", i, p.Faults[i], want[i])
			}
		}
		if &p.Faults[0].Phases[0] == &p.Faults[0].Latency.Phases[0] {
			t.Errorf("a fault and its latency share one phases slice")
		}
	},
	"long-name": func(t *testing.T, p *Plan) {
		if len(p.ChainID) != 50 || !strings.HasPrefix(p.ChainID, "valnet-") {
			t.Errorf("default chain ID %q should be cut to 50 characters", p.ChainID)
		}
	},
}

// checkSigners compares each validator's signer with want, by name.
func checkSigners(t *testing.T, p *Plan, want map[string]SignerPlan) {
	t.Helper()
	if len(p.Validators) != len(want) {
		t.Errorf("got %d validators, want %d", len(p.Validators), len(want))
	}
	for _, v := range p.Validators {
		w, ok := want[v.Name]
		if !ok {
			t.Errorf("unexpected validator %s", v.Name)
			continue
		}
		if !reflect.DeepEqual(v.Signer, w) {
			t.Errorf("%s: signer\n got %s\nwant %s", v.Name, fmtSigner(v.Signer), fmtSigner(w))
		}
	}
}

// fmtSigner shows a signer with its pointers followed.
func fmtSigner(s SignerPlan) string {
	out := fmt.Sprintf("%+v", s)
	if s.Latency != nil {
		out += fmt.Sprintf(" latency=%+v", *s.Latency)
	}
	if s.Keyfile != nil {
		out += fmt.Sprintf(" keyfile=%+v", *s.Keyfile)
	}
	return out
}

func TestGoodScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.good.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.good.yaml (err %v)", err)
	}
	seen := make(map[string]bool)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".good.yaml")
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			p, err := Load(file)
			if err != nil {
				t.Fatalf("unexpected errors:\n%v", err)
			}
			if p.Source != file {
				t.Errorf("Source %q, want %q", p.Source, file)
			}
			if check := goodChecks[name]; check != nil {
				check(t, p)
			}
		})
	}
	for name := range goodChecks {
		if !seen[name] {
			t.Errorf("check for testdata/%s.good.yaml, which does not exist", name)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	for _, c := range []struct {
		err  Error
		want string
	}{
		{Error{Pos: Pos{"a.yaml", 3, 5}, Key: "run.backend", Msg: "unknown backend \"x\"", Allowed: []string{"inprocess"}},
			`a.yaml:3:5: run.backend: unknown backend "x" (allowed: inprocess)`},
		{Error{Pos: Pos{"a.yaml", 1, 1}, Key: "name", Msg: "required"}, "a.yaml:1:1: name: required"},
		{Error{Pos: Pos{"a.yaml", 1, 1}, Msg: "the file is empty"}, "a.yaml:1:1: the file is empty"},
		{Error{Pos: Pos{"a.yaml", 7, 0}, Msg: "YAML syntax error: x"}, "a.yaml:7: YAML syntax error: x"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

func TestAsErrors(t *testing.T) {
	_, err := Parse("x.yaml", []byte("name: x\nbogus: 1\n"))
	wrapped := fmt.Errorf("loading: %w", err)
	es, ok := AsErrors(wrapped)
	if !ok || len(es) != 2 { // bogus, and validators missing
		t.Fatalf("AsErrors(%v) = %v, %v", wrapped, es, ok)
	}
	if es[0].Key != "validators" || es[1].Key != "bogus" || es[1].Pos != (Pos{"x.yaml", 2, 1}) {
		t.Errorf("got %#v", es)
	}
	if es, ok := AsErrors(fmt.Errorf("w: %w", es[0])); !ok || len(es) != 1 {
		t.Errorf("a single Error should be found too")
	}
	if _, ok := AsErrors(errors.New("other")); ok {
		t.Errorf("AsErrors accepted a foreign error")
	}
}

func TestResolve(t *testing.T) {
	p, err := Resolve("baseline")
	if err != nil || p.Source != "builtin:baseline" {
		t.Fatalf("Resolve(baseline) = %+v, %v", p, err)
	}
	p, err = Resolve("testdata/minimal.good.yaml")
	if err != nil || p.Source != "testdata/minimal.good.yaml" {
		t.Fatalf("Resolve(file) = %+v, %v", p, err)
	}
	// A .yaml argument is a file even when missing: say so, not "no builtin".
	if _, err := Resolve("testdata/missing.yaml"); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Resolve(missing.yaml) = %v, want a not-exist error", err)
	}
	_, err = Resolve("nonesuch")
	if err == nil || !strings.Contains(err.Error(), "(builtins: "+strings.Join(builtinNames(), ", ")+")") || !strings.Contains(err.Error(), "quickstart") {
		t.Errorf("Resolve(nonesuch) = %v, want the builtins listed", err)
	}
	// A file without extension is still a file when it exists.
	dir := t.TempDir()
	path := filepath.Join(dir, "baseline")
	if err := os.WriteFile(path, []byte("name: mine\nvalidators: [{name: a}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := Resolve(path); err != nil || p.Name != "mine" {
		t.Errorf("Resolve(existing file) = %+v, %v", p, err)
	}
}

// TestEveryBadFileErrorIsLocated guards the promise that every problem
// points into the file.
func TestEveryBadFileErrorIsLocated(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.bad.yaml")
	for _, file := range files {
		_, err := Load(file)
		es, _ := AsErrors(err)
		for _, e := range es {
			if e.Pos.File != file || e.Pos.Line < 1 {
				t.Errorf("%s: unlocated error %#v", file, e)
			}
		}
	}
}
