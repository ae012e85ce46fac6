package results

import (
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
	"reflect"
	"testing"
)

// TestQuorumCritical: the precommits the quorum waited for are the first
// +2/3 of the power the deciding node received for the committed block;
// the ones after (or nil, or for another block) were not needed.
func TestQuorumCritical(t *testing.T) {
	// decided: v1's node commits height 1 at 500 ms, v2's at 600.
	run := func(votes ...eventlog.Event) []eventlog.Event {
		evs := []eventlog.Event{runStart("v1", "v2", "yubi", "ledger")}
		evs = append(evs, votes...)
		b1 := block(1, 700, 0, nil, nil)
		b1.BlockID = "B"
		return append(evs, stepAt(500, "v1", 1, 0, "commit"), stepAt(600, "v2", 1, 0, "commit"),
			b1, block(2, 1700, 0, nil, nil), runEnd(2000, eventlog.StopHeights))
	}
	pc := func(ms float64, node, v, id string) eventlog.Event {
		return voteAt(ms, node, v, phase.Precommit, 1, 0, id)
	}
	tests := []struct {
		name   string
		events []eventlog.Event
		want   []string // quorum_critical of height 1, in order
	}{
		{"the quorum waits for the faster of the two slow signers",
			run(pc(100, "v1", "v1", "B"), pc(110, "v1", "v2", "B"), pc(300, "v1", "yubi", "B"), pc(900, "v1", "ledger", "B")),
			[]string{"v1", "v2", "yubi"}},
		{"the first of the slow ones completes it, the other is not needed",
			run(pc(100, "v1", "v1", "B"), pc(110, "v1", "v2", "B"), pc(150, "v1", "ledger", "B"), pc(300, "v1", "yubi", "B")),
			[]string{"v1", "v2", "ledger"}},
		{"arrival order at the deciding node, not elsewhere",
			run(pc(100, "v2", "ledger", "B"), pc(100, "v1", "ledger", "B"), pc(110, "v1", "v1", "B"), pc(120, "v1", "v2", "B"), pc(300, "v1", "yubi", "B")),
			[]string{"ledger", "v1", "v2"}},
		{"nil and other-block precommits do not make the quorum",
			run(pc(100, "v1", "v1", ""), pc(110, "v1", "v2", "B"), pc(120, "v1", "yubi", "C"), pc(130, "v1", "v1", "B"), pc(140, "v1", "ledger", "B")),
			[]string{"v2", "v1", "ledger"}},
		{"received after the commit step: no quorum shown",
			run(pc(100, "v1", "v1", "B"), pc(110, "v1", "v2", "B"), pc(550, "v1", "yubi", "B")),
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChain(tt.events)
			got := newIndex(tt.events, runStartOf(tt.events)).quorumCritical(c)[1]
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("quorum_critical %v, want %v", got, tt.want)
			}
			s := Summarize(tt.events)
			if want := map[bool]int{true: 1, false: 0}[tt.want != nil]; s.QuorumHeights != want {
				t.Errorf("quorum_heights %d, want %d", s.QuorumHeights, want)
			}
			for _, v := range s.Validators {
				crit := 0
				for _, w := range tt.want {
					if w == v.Name {
						crit = 1
					}
				}
				if v.QuorumCritical != crit {
					t.Errorf("%s quorum_critical %d, want %d", v.Name, v.QuorumCritical, crit)
				}
			}
		})
	}
}
