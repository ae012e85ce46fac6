package faultcore

import (
	"errors"
	"github.com/valnet/valnet/internal/action"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
)

// sign signs a vote of phase at height h through fs and says how it failed
// ("" signed, "drop", "error").
func sign(t *testing.T, fs *signers.Faults, ph string, h int64) string {
	t.Helper()
	typ := types.PrevoteType
	if ph == phase.Precommit {
		typ = types.PrecommitType
	}
	err := fs.SignVote("c", &cmtproto.Vote{Type: typ, Height: h, Timestamp: time.Now()}, false)
	var fe *signers.ErrFault
	switch {
	case err == nil:
		return ""
	case errors.As(err, &fe):
		return string(fe.Mode)
	default:
		t.Fatalf("sign: %v", err)
		return ""
	}
}

func TestArmAndStartSigner(t *testing.T) {
	at := func(h int64) scenarios.FaultAt { return scenarios.FaultAt{Height: h} }
	tests := []struct {
		name     string
		fault    scenarios.FaultPlan
		what     string
		undo     bool
		armed    map[int64]string // before Start: height -> outcome of a prevote
		started  map[int64]string // after Start
		precommt string           // a precommit of height 5 after Start
	}{
		{"drop at one height is armed up front, prevote only",
			scenarios.FaultPlan{Action: action.SignerDrop, At: at(5), Phases: []string{phase.Prevote}},
			"drops prevote signatures at height 5", false,
			map[int64]string{4: "", 5: "drop", 6: ""}, map[int64]string{5: "drop", 6: ""}, ""},
		{"error at one height and round",
			scenarios.FaultPlan{Action: action.SignerError, At: scenarios.FaultAt{Height: 5, Round: 0, HasRound: true}, Phases: phase.All()},
			"fails proposal, prevote, precommit signatures at height 5 round 0", false,
			map[int64]string{5: "error"}, map[int64]string{5: "error", 6: ""}, "error"},
		{"a window is not armed; it fails every height while on",
			scenarios.FaultPlan{Action: action.SignerError, At: at(5), Duration: time.Second, Phases: phase.All()},
			"fails proposal, prevote, precommit signatures", true,
			map[int64]string{5: ""}, map[int64]string{5: "error", 9: "error"}, "error"},
		{"delay adds its model to its phases",
			scenarios.FaultPlan{Action: action.SignerDelay, At: at(2), Phases: []string{phase.Precommit},
				Latency: &scenarios.LatencyPlan{Spec: latency.Spec{Dist: latency.Fixed, Value: time.Millisecond}}},
			"adds fixed 1ms to precommit", true,
			map[int64]string{2: ""}, map[int64]string{2: ""}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := signers.WithFaults(types.NewMockPV())
			armSigner(fs, "f", tc.fault)
			for h, want := range tc.armed {
				if got := sign(t, fs, phase.Prevote, h); got != want {
					t.Errorf("armed, prevote h=%d: %q, want %q", h, got, want)
				}
			}
			on, err := startSigner(fs, "f", tc.fault, 1)
			if err != nil {
				t.Fatal(err)
			}
			if on.What != tc.what || (on.Undo != nil) != tc.undo {
				t.Errorf("Start: %q (undo %v), want %q (undo %v)", on.What, on.Undo != nil, tc.what, tc.undo)
			}
			for h, want := range tc.started {
				if got := sign(t, fs, phase.Prevote, h); got != want {
					t.Errorf("started, prevote h=%d: %q, want %q", h, got, want)
				}
			}
			if got := sign(t, fs, phase.Precommit, 5); got != tc.precommt {
				t.Errorf("started, precommit h=5: %q, want %q", got, tc.precommt)
			}
			if on.Undo == nil {
				return
			}
			on.Undo()
			for h := range tc.started {
				if got := sign(t, fs, phase.Prevote, h+100); got != "" {
					t.Errorf("after Undo, prevote h=%d: %q", h+100, got)
				}
			}
		})
	}
}

func TestStartRefusesOtherFaults(t *testing.T) {
	fs := signers.WithFaults(types.NewMockPV())
	for _, f := range []scenarios.FaultPlan{
		{Action: action.SignerOutage},
		{Action: action.NodeKill},
		{Action: action.SignerDelay}, // no latency
	} {
		if _, err := startSigner(fs, "f", f, 1); err == nil {
			t.Errorf("startSigner(%s) applied it", f.Action)
		}
	}
	if signerApplies(action.SignerOutage) || !signerApplies(action.SignerDrop) {
		t.Error("Applies disagrees with Start")
	}
}
