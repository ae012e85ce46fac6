package results

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// writeMissedAndRounds adds to the end-of-run table why precommits were
// missed and why rounds changed; both sections are left out when empty so
// a healthy run's table stays short.
func writeMissedAndRounds(w io.Writer, s *Summary) {
	var missed []ValidatorSummary
	for _, v := range s.Validators {
		if v.MissedPrecommits > 0 {
			missed = append(missed, v)
		}
	}
	if len(missed) > 0 {
		fmt.Fprintf(w, "\nMissed precommits by cause (missed.csv has each one)\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, v := range missed {
			fmt.Fprintf(tw, "  %s\t%d\t%s\tlongest run %d\n", v.Name, v.MissedPrecommits, v.MissedByCause, v.ConsecutiveMissedMax)
		}
		tw.Flush()
	}
	if len(s.RoundChanges) > 0 {
		fmt.Fprintf(w, "\nRound changes\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, rc := range s.RoundChanges {
			fmt.Fprintf(tw, "  h%d r%d\t%s\t%s\n", rc.Height, rc.Round, rc.Cause, rc.Detail)
		}
		tw.Flush()
	}
}
