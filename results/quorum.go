package results

import "github.com/valnet/valnet/internal/phase"

// quorumCritical lists, per committed height, the validators whose
// precommit the quorum waited for: the precommits for the committed
// block, in the order the deciding node (the first to enter step commit
// at that height) received them, up to the first that gave it more than
// 2/3 of the power. With equal power these are the fastest two thirds; a
// validator outside the list was not needed, so how slow its signer is
// did not hold the height up (and its precommit may reach the next block
// or not: see docs/results.md, "Which precommits the quorum waited for").
// A height whose deciding node shows no such quorum is left out.
func (x *index) quorumCritical(c *chain) map[int64][]string {
	out := map[int64][]string{}
	if x.totalPower <= 0 {
		return out
	}
	for _, h := range c.heights {
		cr, ok := c.commitRound(h)
		if !ok {
			continue
		}
		var decider *Event
		for _, ev := range x.commitSteps[h] {
			if decider == nil || ev.Time.Before(decider.Time) {
				decider = ev
			}
		}
		if decider == nil {
			continue
		}
		block := c.blocks[h].BlockID
		var power int64
		var voters []string
		seen := map[string]bool{}
		for _, ev := range x.votesAt(hr{h, cr}) {
			if ev.Node != decider.Node || ev.Phase != phase.Precommit || ev.BlockID == "" ||
				block != "" && ev.BlockID != block || seen[ev.Validator] || ev.Time.After(decider.Time) {
				continue
			}
			seen[ev.Validator] = true
			voters = append(voters, ev.Validator)
			power += x.power[ev.Validator]
			if x.quorum(power) {
				out[h] = voters
				break
			}
		}
	}
	return out
}
