package scenarios

import (
	_ "embed"
	"slices"
)

// starter.yaml is what `valnet init` writes: every key, with its default and
// a comment. TestStarterParses keeps it valid and complete.
//
//go:embed starter.yaml
var starter []byte

// StarterScenario returns a commented starter scenario for `valnet init`.
func StarterScenario() []byte { return slices.Clone(starter) }
