// Package phase names the consensus messages a validator signs. It is the
// one declaration of these names: the scenario schema, the signers and the
// standalone signer all use it, so a phase cannot be spelt two ways.
package phase

import "slices"

// The phases, as scenarios, events and signer output write them.
const (
	Proposal  = "proposal"
	Prevote   = "prevote"
	Precommit = "precommit"
)

// All returns every phase in consensus order, as a new slice: a caller may
// keep or change it without touching anyone else's.
func All() []string { return []string{Proposal, Prevote, Precommit} }

// Valid reports whether name is a phase.
func Valid(name string) bool { return slices.Contains(All(), name) }
