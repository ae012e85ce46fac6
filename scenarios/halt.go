package scenarios

import "time"

// HaltAfter is the halt threshold a run records, and whether the
// scenario set it: an explicit run.halt_after is used as it is. By default
// it is the time of round 0 plus round 1 with every timeout firing, plus
// timeout_commit once: one round change is not a halt, a stall longer
// than two failed rounds is. The summary raises the default to 5 × the
// run's median block interval where that is longer (results/halts.go).
//
// CometBFT v1.0.1: config/config.go times round r's timeouts as
// timeout + r × delta (timeoutTime, used by ConsensusConfig.Propose,
// Prevote and Precommit), and internal/consensus/state.go schedules them
// in enterPropose, enterPrevoteWait and enterPrecommitWait, and starts the
// next height timeout_commit after the commit (config.Commit). At the
// defaults (DefaultConsensusConfig, which scenarios applies: propose 3s,
// prevote and precommit 1s, each delta 0.5s, commit 1s) that is
// (3+1+1) + (3.5+1.5+1.5) + 1 = 12.5 s.
func (p *Plan) HaltAfter() (d time.Duration, explicit bool) {
	if p.Run.HaltAfter > 0 {
		return p.Run.HaltAfter, true
	}
	t := p.Timeouts
	round := func(r time.Duration) time.Duration {
		return t.Propose + r*t.ProposeDelta + t.Prevote + r*t.PrevoteDelta + t.Precommit + r*t.PrecommitDelta
	}
	return round(0) + round(1) + t.Commit, false
}
