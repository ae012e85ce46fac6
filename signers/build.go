package signers

import (
	"fmt"

	"github.com/cometbft/cometbft/crypto"
)

// Spec says which signer chain to build for one validator.
type Spec struct {
	Type      string // "local"
	Key       crypto.PrivKey
	KeyFile   string     // local: where the key lives (priv_validator_key.json)
	StateFile string     // local: the persisted last-sign state (priv_validator_state.json)
	Latency   *ModelSpec // nil: no injected delay
	Phases    []string   // phases the delay applies to; empty: all
	Seed      int64      // run seed, for latency draws
	Stream    string     // usually the validator name, to separate draws
	Obs       Observer   // receives every signature; nil: none
}

// Built is a ready signer chain and a label saying what it is.
type Built struct {
	Signer Signer
	Label  string // e.g. "local", "local+latency(fixed 200ms)"
}

// Build opens the backend of spec.Type and wraps it, innermost first, with
// the latency model and the instrumentation.
func Build(spec Spec) (Built, error) {
	var (
		s     Signer
		label string
	)
	switch spec.Type {
	case "local", "":
		local, err := OpenLocal(spec.Key, spec.KeyFile, spec.StateFile)
		if err != nil {
			return Built{}, err
		}
		s, label = local, "local"
	default:
		return Built{}, fmt.Errorf("signer type %q is not available (allowed: local)", spec.Type)
	}
	if spec.Latency != nil {
		model, err := NewModel(*spec.Latency, spec.Seed, spec.Stream)
		if err != nil {
			return Built{}, err
		}
		s = WithLatency(s, model, spec.Phases)
		label += "+latency(" + model.String() + ")"
	}
	if spec.Obs != nil {
		s = Instrument(s, spec.Obs)
	}
	return Built{Signer: s, Label: label}, nil
}
