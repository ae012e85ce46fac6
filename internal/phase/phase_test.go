package phase

import (
	"slices"
	"testing"
)

func TestAllIsFreshAndInConsensusOrder(t *testing.T) {
	a := All()
	if want := []string{"proposal", "prevote", "precommit"}; !slices.Equal(a, want) {
		t.Fatalf("All() = %v, want %v", a, want)
	}
	a[0] = "changed"
	if All()[0] != Proposal {
		t.Error("changing one All() slice changed the next")
	}
}

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{Proposal, true}, {Prevote, true}, {Precommit, true},
		{"commit", false}, {"", false}, {"Prevote", false},
	} {
		if got := Valid(tc.name); got != tc.want {
			t.Errorf("Valid(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
