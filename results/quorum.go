package results

import "github.com/valnet/valnet/internal/phase"

// quorumAt lists the validators whose precommit the quorum waited
// for at committed height hd (commit round cr): the precommits for the
// committed block, in the order the deciding node (the first to enter
// step commit at that height) received them, up to the first that gave
// it more than 2/3 of the power. With equal power these are the fastest
// two thirds; a validator outside the list was not needed, so how slow
// its signer is did not hold the height up (and its precommit may reach
// the next block or not: see docs/results.md, "Which precommits the
// quorum waited for"). ok false: the deciding node shows no such quorum.
func (x *index) quorumAt(hd *hdata, cr int32) (voters []int32, ok bool) {
	if x.totalPower <= 0 {
		return nil, false
	}
	var decider *commitStep
	for i := range hd.commitSteps {
		if ev := &hd.commitSteps[i]; decider == nil || ev.t.Before(decider.t) {
			decider = ev
		}
	}
	if decider == nil {
		return nil, false
	}
	block := hd.blockID
	var power int64
	seen := map[int32]bool{}
	for _, ev := range x.votesAt(hr{hd.height, cr}) {
		if ev.node != decider.node || ev.phase != phase.Precommit || ev.blockID == "" ||
			block != "" && ev.blockID != block || seen[ev.validator] || ev.t.After(decider.t) {
			continue
		}
		seen[ev.validator] = true
		voters = append(voters, ev.validator)
		power += x.powerOf(ev.validator)
		if x.quorum(power) {
			return voters, true
		}
	}
	return nil, false
}

// quorumCritical is quorumAt of every committed height of c that shows a
// quorum, by height (for tests: the Summarizer judges one height at a time).
func (x *index) quorumCritical(c *chain) map[int64][]string {
	out := map[int64][]string{}
	for _, h := range c.heights {
		hd := x.heights[h]
		if hd == nil {
			continue
		}
		cr, ok := c.commitRound(h, hd.stepCommit)
		if !ok {
			continue
		}
		if voters, ok := x.quorumAt(hd, cr); ok {
			for _, v := range voters {
				out[h] = append(out[h], x.names.name(v))
			}
		}
	}
	return out
}
