// Package signerfault applies a scenario's signer faults (signer-delay,
// signer-drop, signer-error) to a signer chain's Faults. `valnet run` and
// `valnet signer serve` both do it through here, so a fault does the same
// to a signer and is described the same way whoever drives it.
package signerfault

import (
	"fmt"
	"github.com/valnet/valnet/internal/action"
	"strings"

	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
)

// Applies reports whether name is an action this package applies.
func Applies(name string) bool {
	switch name {
	case action.SignerDelay, action.SignerDrop, action.SignerError:
		return true
	}
	return false
}

// atOneHeight reports a drop or error that hits only its height (no window).
func atOneHeight(f scenarios.FaultPlan) bool {
	return f.Action != action.SignerDelay && f.Duration == 0 && f.At.Height > 0
}

// Arm installs, before the chain gets there, a drop or error that hits only
// its height, so it matches signatures of that height exactly however fast
// the chain reaches it. Other faults are left for Start.
func Arm(fs *signers.Faults, id string, f scenarios.FaultPlan) {
	if Applies(f.Action) && atOneHeight(f) {
		fs.SetFailure(id, failRule(f, true))
	}
}

func failRule(f scenarios.FaultPlan, atHeight bool) signers.FailRule {
	rule := signers.FailRule{Mode: signers.FailError, Phases: f.Phases}
	if f.Action == action.SignerDrop {
		rule.Mode = signers.FailDrop
	}
	if atHeight {
		rule.Height, rule.Round, rule.HasRound = f.At.Height, f.At.Round, f.At.HasRound
	}
	return rule
}

// Started is a fault Start switched on.
type Started struct {
	What   string // what it does, e.g. "adds fixed 2s to prevote, precommit"
	Undo   func() // ends it; nil when there is nothing to end (a fault at one height)
	Detail string // what its end means, e.g. "delay removed"
}

// Start switches f on in fs. id names the fault (and seeds a delay's draws
// with seed). A fault at one height was armed already: Start only says
// what it does.
func Start(fs *signers.Faults, id string, f scenarios.FaultPlan, seed int64) (Started, error) {
	phases := "all phases"
	if len(f.Phases) > 0 {
		phases = strings.Join(f.Phases, ", ")
	}
	switch f.Action {
	case action.SignerDelay:
		if f.Latency == nil {
			return Started{}, fmt.Errorf("%s has no latency", f.Action)
		}
		model, err := latency.New(f.Latency.Spec, seed, id)
		if err != nil {
			return Started{}, err
		}
		fs.SetDelay(id, model, f.Phases)
		return Started{What: "adds " + model.String() + " to " + phases,
			Undo: func() { fs.ClearDelay(id) }, Detail: "delay removed"}, nil
	case action.SignerDrop, action.SignerError:
		what := "drops"
		if f.Action == action.SignerError {
			what = "fails"
		}
		what += " " + phases + " signatures"
		if atOneHeight(f) {
			at := fmt.Sprintf(" at height %d", f.At.Height)
			if f.At.HasRound {
				at += fmt.Sprintf(" round %d", f.At.Round)
			}
			return Started{What: what + at}, nil
		}
		fs.SetFailure(id, failRule(f, false))
		return Started{What: what, Undo: func() { fs.ClearFailure(id) }, Detail: "signatures back"}, nil
	}
	return Started{}, fmt.Errorf("%s is not a fault inside a signer", f.Action)
}
