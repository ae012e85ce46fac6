// Package signerfault applies a scenario's signer faults (signer-delay,
// signer-drop, signer-error) to a signer chain's Faults. `valnet run` and
// `valnet signer serve` both do it through here, so a fault does the same
// to a signer and is described the same way whoever drives it.
package faultcore

import (
	"fmt"
	"github.com/valnet/valnet/internal/action"
	"strings"

	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
)

// signerApplies reports whether name is an action this package applies.
func signerApplies(name string) bool {
	switch name {
	case action.SignerDelay, action.SignerDrop, action.SignerError:
		return true
	}
	return false
}

// AtOneHeight reports a signer drop or error that hits only its height
// (no window): armed before the chain gets there, it has no end.
func AtOneHeight(f scenarios.FaultPlan) bool {
	return f.Action != action.SignerDelay && f.Duration == 0 && f.At.Height > 0
}

// armSigner installs, before the chain gets there, a drop or error that hits only
// its height, so it matches signatures of that height exactly however fast
// the chain reaches it. Other faults are left for startSigner.
func armSigner(fs *signers.Faults, id string, f scenarios.FaultPlan) {
	if signerApplies(f.Action) && AtOneHeight(f) {
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

// started is a signer fault startSigner switched on.
type started struct {
	What   string // what it does, e.g. "adds fixed 2s to prevote, precommit"
	Undo   func() // ends it; nil when there is nothing to end (a fault at one height)
	Detail string // what its end means, e.g. "delay removed"
}

// startSigner switches f on in fs. id names the fault (and seeds a delay's draws
// with seed). A fault at one height was armed already: startSigner only says
// what it does.
func startSigner(fs *signers.Faults, id string, f scenarios.FaultPlan, seed int64) (started, error) {
	phases := "all phases"
	if len(f.Phases) > 0 {
		phases = strings.Join(f.Phases, ", ")
	}
	switch f.Action {
	case action.SignerDelay:
		if f.Latency == nil {
			return started{}, fmt.Errorf("%s has no latency", f.Action)
		}
		model, err := latency.New(f.Latency.Spec, seed, id)
		if err != nil {
			return started{}, err
		}
		fs.SetDelay(id, model, f.Phases)
		return started{What: "adds " + model.String() + " to " + phases,
			Undo: func() { fs.ClearDelay(id) }, Detail: "delay removed"}, nil
	case action.SignerDrop, action.SignerError:
		what := "drops"
		if f.Action == action.SignerError {
			what = "fails"
		}
		what += " " + phases + " signatures"
		if AtOneHeight(f) {
			at := fmt.Sprintf(" at height %d", f.At.Height)
			if f.At.HasRound {
				at += fmt.Sprintf(" round %d", f.At.Round)
			}
			return started{What: what + at}, nil
		}
		fs.SetFailure(id, failRule(f, false))
		return started{What: what, Undo: func() { fs.ClearFailure(id) }, Detail: "signatures back"}, nil
	}
	return started{}, fmt.Errorf("%s is not a fault inside a signer", f.Action)
}
