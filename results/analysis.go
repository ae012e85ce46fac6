package results

// summarizeConsensus adds what needs the nodes' view of consensus (votes,
// steps, proposals) rather than the signers' view: missed-precommit causes
// (each one kept in s.Missed for missed.csv), late votes and round-change
// causes. Validators it names that are not in
// s.Validators (e.g. an unknown address in a vote) are left out.
func summarizeConsensus(s *Summary, events []Event, start *Event, c *chain) {
	x := newIndex(events, start)
	rows := map[string]*ValidatorSummary{}
	for i := range s.Validators {
		rows[s.Validators[i].Name] = &s.Validators[i]
	}
	s.Missed = missedPrecommits(c, x)
	for _, m := range s.Missed {
		if v := rows[m.Validator]; v != nil {
			if p := v.MissedByCause.field(m.Cause); p != nil {
				*p++
			}
		}
	}
	runs := consecutiveMissed(c)
	prevotes, precommits := x.lateVotes()
	changes, notReceived := x.roundChanges(c)
	s.RoundChanges = changes
	for name, v := range rows {
		v.MissedBlocks = v.MissedPrecommits
		v.ConsecutiveMissedMax = runs[name]
		v.LatePrevotes, v.LatePrecommits = prevotes[name], precommits[name]
		v.ProposalsNotReceived = notReceived[name]
	}
}
