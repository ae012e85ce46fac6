package results

// summarizeConsensus adds what needs the nodes' view of consensus (votes,
// steps, proposals) rather than the signers' view, as the Summarizer
// judged it height by height: missed-precommit causes (each one kept in
// s.Missed for missed.csv), late votes and round-change causes.
// Validators it names that are not in s.Validators (e.g. an unknown
// address in a vote) are left out.
func (z *Summarizer) summarizeConsensus(s *Summary) {
	rows := map[string]*ValidatorSummary{}
	for i := range s.Validators {
		rows[s.Validators[i].Name] = &s.Validators[i]
	}
	s.Missed = z.missed
	for _, m := range s.Missed {
		if v := rows[m.Validator]; v != nil {
			if p := v.MissedByCause.field(m.Cause); p != nil {
				*p++
			}
		}
	}
	runs := consecutiveMissed(z.c)
	s.RoundChanges = append(s.RoundChanges, z.changes...)
	s.QuorumHeights = z.quorumHeights
	for id, n := range z.critical {
		if v := rows[z.names.name(id)]; v != nil {
			v.QuorumCritical += n
		}
	}
	for name, v := range rows {
		id := z.names.id(name)
		v.MissedBlocks = v.MissedPrecommits
		v.ConsecutiveMissedMax = runs[name]
		v.LatePrevotes, v.LatePrecommits = z.latePrevotes[id], z.latePrecommits[id]
		v.ProposalsNotReceived = z.notReceived[name]
	}
}
