package results

import (
	"bufio"
	"fmt"
	"github.com/valnet/valnet/results/eventlog"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the human end-of-run report: run, chain, per-validator
// table, expectations, and a last line "RESULT: PASS", "RESULT: FAIL (n
// expectation(s) failed)" or "RESULT: ERROR (<reason>)" that scripts may
// grep. Everything shown comes from s, so the report of a finished run can be
// reprinted from its summary.
func WriteTable(w io.Writer, s *Summary) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }

	if overloaded(s) {
		p("%s\n", overloadedLine(s))
	}
	p("Run %s (backend %s, chain %s, seed %d)\n", orDash(s.Scenario), orDash(s.Backend), orDash(s.ChainID), s.Seed)
	if n := nodesText(s); n != "" {
		p("Nodes: %s\n", n)
	}
	if label, notes, na := modelHeader(s); label != "" {
		p("%s\n", label)
		for _, n := range notes {
			p("  model simplifies: %s\n", n)
		}
		if na != "" {
			p("%s\n", na)
		}
	}

	p("\nChain\n")
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  heights committed\t%s\n", heightsText(s.Heights))
	fmt.Fprintf(tw, "  heights with round change\t%s\n", roundsText(s.Rounds))
	fmt.Fprintf(tw, "  block interval\t%s\n", intervalText(s.BlockIntervalMS))
	for _, hl := range s.Halts {
		fmt.Fprintf(tw, "  halt\t%s\n", haltText(hl))
	}
	fmt.Fprintf(tw, "  double signs\t%d\n", s.DoubleSigns)
	for _, d := range s.DoubleSignDetails {
		fmt.Fprintf(tw, "  \t%s h%d r%d %s: %s\n", d.Validator, d.Height, d.Round, d.Phase, formatBlockIDs(d.BlockIDs))
	}
	if n := len(s.NodeErrors); n > 0 {
		e := s.NodeErrors[0]
		fmt.Fprintf(tw, "  node errors\t%d, events may be missing (first: %s: %s)\n", n, orDash(e.Node), e.Error)
	}
	if s.Load != nil {
		fmt.Fprintf(tw, "  load\t%s\n", loadText(s.Load))
	}
	if s.Host != nil {
		fmt.Fprintf(tw, "  host\t%s\n", hostText(s.Host))
	}
	fmt.Fprintf(tw, "  stop reason\t%s\n", s.StopReason)
	if s.InterruptedStage != "" {
		fmt.Fprintf(tw, "  interrupted\tduring %s\n", s.InterruptedStage)
	}
	if s.Partial {
		fmt.Fprintf(tw, "  PARTIAL\t%s\n", strings.Join(s.PartialReasons, "; "))
	}
	if s.Error != "" {
		fmt.Fprintf(tw, "  error\t%s\n", s.Error)
	}
	fmt.Fprintf(tw, "  duration\t%s\n", s.DurationText())
	tw.Flush()

	if len(s.Validators) > 0 {
		p("\nValidators (missed = precommits absent from the next block / heights counted; quorum = heights whose +2/3 waited for its precommit; sign ms p50/p99)\n")
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  validator\tsigner\tmissed\tnil\tlate pv/pc\tquorum\tproposals\tproposal\tprevote\tprecommit\tsign errors")
		for _, v := range s.Validators {
			l := v.SignLatencyMS
			fmt.Fprintf(tw, "  %s\t%s\t%d/%d\t%d\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%d\n",
				v.Name, orDash(v.Signer), v.MissedPrecommits, v.PrecommitsCounted, v.NilPrecommits,
				s.lateText(&v, "/"), s.quorumText(&v), v.Proposals.Made, v.Proposals.Expected,
				p50p99(l.Proposal), p50p99(l.Prevote), p50p99(l.Precommit), v.SignErrors)
		}
		tw.Flush()
	}

	writeMissedAndRounds(bw, s)

	var failing []ValidatorSummary
	for _, v := range s.Validators {
		if v.SignErrors > 0 {
			failing = append(failing, v)
		}
	}
	if len(failing) > 0 {
		p("\nSign errors (signatures the node asked for that did not reach it; unexplained = no fault on the validator injected them)\n")
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		for _, v := range failing {
			fmt.Fprintf(tw, "  %s\t%d\t%s\tunexplained %d\n", v.Name, v.SignErrors, v.SignFailures, v.SignErrorsUnexplained)
		}
		tw.Flush()
	}

	var remote []ValidatorSummary
	for _, v := range s.Validators {
		if v.SignerLatencyMS != nil {
			remote = append(remote, v)
		}
	}
	if len(remote) > 0 {
		p("\nRemote signers (ms p50/p99: signer side = inside the backend; transport = node side minus signer side)\n")
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  validator	signer side	transport overhead	signatures matched")
		for _, v := range remote {
			overhead, n := "-", 0
			if o := v.TransportOverheadMS; o != nil {
				overhead, n = p50p99(*o), o.Count
			}
			fmt.Fprintf(tw, "  %s	%s	%s	%d\n", v.Name, p50p99(v.SignerLatencyMS.All), overhead, n)
		}
		tw.Flush()
	}

	textTables := func(tables []textTable) {
		for _, table := range tables {
			tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
			for _, row := range table.lines() {
				fmt.Fprintf(tw, "  %s\n", strings.Join(row, "\t"))
			}
			tw.Flush()
		}
	}
	if dt := newDeviceTables(s); dt != nil {
		p("\nShared signing devices (%s)\n", dt.Note)
		textTables(dt.Tables())
	}
	if tt := newThresholdTables(s); tt != nil {
		p("\nThreshold signers (%s)\n", tt.Note)
		textTables(tt.Tables())
	}
	if nt := newPeerNodeTables(s); nt != nil {
		p("\n%s (%s)\n", nt.Title(), nt.Note)
		textTables(nt.Tables())
	}

	if len(s.Faults) > 0 {
		p("\nFaults (ms since the run started)\n")
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		for _, f := range s.Faults {
			end := "-"
			if f.EndMS > 0 {
				end = strconv.FormatInt(f.EndMS, 10)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d..%s\t%s\n", f.Action, f.Target, f.StartMS, end, f.Detail)
		}
		tw.Flush()
	}

	if len(s.Expectations) > 0 {
		p("\nExpectations\n")
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		for _, e := range shownExpectations(s.Expectations) {
			status := "PASS"
			if !e.OK {
				status = "FAIL"
			}
			warn := ""
			if e.Warning != "" {
				warn = "\twarning: " + e.Warning
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s%s\n", status, expectationSubject(e), formatBounds(e.Min, e.Max), expectationValue(e), warn)
		}
		tw.Flush()
	}

	p("\n%s\n", ResultLine(s))
	return bw.Flush()
}

// ResultLine is the verdict, the table's last line: "RESULT: PASS",
// "RESULT: FAIL (n expectation(s) failed)" or "RESULT: ERROR (<reason>)". A
// run that errored or was interrupted is an ERROR whatever its expectations
// say, since they judged a partial run.
func ResultLine(s *Summary) string {
	if s.StopReason == eventlog.StopError || s.StopReason == eventlog.StopInterrupted {
		reason := s.StopReason
		switch {
		case s.StopReason == eventlog.StopError && s.Error != "":
			reason = s.Error
		case s.Error != "":
			reason += ": " + s.Error
		}
		return "RESULT: ERROR (" + reason + ")"
	}
	n := len(s.Failed())
	stopped := "stopped at max_duration before reaching run.heights"
	if s.Heights.Target > 0 {
		stopped = fmt.Sprintf("stopped at max_duration before height %d", s.Heights.Target)
	}
	switch {
	case s.StopReason == eventlog.StopMaxDuration && n > 0:
		return fmt.Sprintf("RESULT: FAIL (%d expectation(s) failed; %s)", n, stopped)
	case s.StopReason == eventlog.StopMaxDuration:
		return "RESULT: FAIL (" + stopped + ")"
	case n > 0:
		return fmt.Sprintf("RESULT: FAIL (%d expectation(s) failed)", n)
	}
	return "RESULT: PASS"
}
