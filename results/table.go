package results

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable writes the human end-of-run report: run, chain, per-validator
// table, expectations, and a last line "RESULT: PASS", "RESULT: FAIL (n
// expectation(s) failed)" or "RESULT: ERROR (<reason>)" that scripts may
// grep. Everything shown comes from s, so the report of a finished run can be
// reprinted from its summary.
func WriteTable(w io.Writer, s *Summary) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }

	p("Run %s (backend %s, chain %s, seed %d)\n", orDash(s.Scenario), orDash(s.Backend), orDash(s.ChainID), s.Seed)

	p("\nChain\n")
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	h := s.Heights
	heights := strconv.Itoa(h.Committed)
	if h.Committed > 0 {
		heights += fmt.Sprintf(" (%d..%d)", h.First, h.Last)
	}
	if h.Target > 0 {
		heights += fmt.Sprintf(", target %d", h.Target)
	}
	fmt.Fprintf(tw, "  heights committed\t%s\n", heights)
	r := s.Rounds
	rounds := fmt.Sprintf("%d (max commit round %d, extra rounds %d)", r.HeightsWithRoundChange, r.MaxCommitRound, r.ExtraRounds)
	if r.UnknownCommitRound > 0 {
		rounds += fmt.Sprintf(", commit round unknown for %d", r.UnknownCommitRound)
	}
	fmt.Fprintf(tw, "  heights with round change\t%s\n", rounds)
	bi := s.BlockIntervalMS
	interval := "-"
	if bi.Count > 0 {
		interval = fmt.Sprintf("p50 %s ms, p95 %s ms, max %s ms (%d intervals)", formatMS(bi.P50), formatMS(bi.P95), formatMS(bi.Max), bi.Count)
	}
	fmt.Fprintf(tw, "  block interval\t%s\n", interval)
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
	fmt.Fprintf(tw, "  stop reason\t%s\n", s.StopReason)
	if s.Error != "" {
		fmt.Fprintf(tw, "  error\t%s\n", s.Error)
	}
	fmt.Fprintf(tw, "  duration\t%s\n", (time.Duration(s.DurationMS) * time.Millisecond).String())
	tw.Flush()

	if len(s.Validators) > 0 {
		p("\nValidators (missed = precommits absent from the next block / heights counted; sign ms p50/p99)\n")
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  validator\tsigner\tmissed\tnil\tlate pv/pc\tproposals\tproposal\tprevote\tprecommit\tsign errors")
		for _, v := range s.Validators {
			l := v.SignLatencyMS
			fmt.Fprintf(tw, "  %s\t%s\t%d/%d\t%d\t%d/%d\t%d/%d\t%s\t%s\t%s\t%d\n",
				v.Name, orDash(v.Signer), v.MissedPrecommits, v.PrecommitsCounted, v.NilPrecommits,
				v.LatePrevotes, v.LatePrecommits, v.Proposals.Made, v.Proposals.Expected,
				p50p99(l.Proposal), p50p99(l.Prevote), p50p99(l.Precommit), v.SignErrors)
		}
		tw.Flush()
	}

	writeMissedAndRounds(bw, s)

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
		for _, e := range s.Expectations {
			status := "PASS"
			if !e.OK {
				status = "FAIL"
			}
			subject := e.Metric
			if e.Validator != "" {
				subject += " " + e.Validator
			}
			if e.Phase != "" {
				subject += " " + e.Phase
			}
			value := formatMS(e.Value)
			switch {
			case e.Error != "":
				value = "error: " + e.Error
			case e.Note != "":
				value += " (" + e.Note + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", status, subject, formatBounds(e.Min, e.Max), value)
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
	if s.StopReason == StopError || s.StopReason == StopInterrupted {
		reason := s.StopReason
		switch {
		case s.StopReason == StopError && s.Error != "":
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
	case s.StopReason == StopMaxDuration && n > 0:
		return fmt.Sprintf("RESULT: FAIL (%d expectation(s) failed; %s)", n, stopped)
	case s.StopReason == StopMaxDuration:
		return "RESULT: FAIL (" + stopped + ")"
	case n > 0:
		return fmt.Sprintf("RESULT: FAIL (%d expectation(s) failed)", n)
	}
	return "RESULT: PASS"
}

// p50p99 formats a latency cell; "-" when the phase was never signed, so
// "no data" is not confused with 0 ms.
func p50p99(st LatencyStats) string {
	if st.Count == 0 {
		return "-"
	}
	return formatLatency(st.P50) + "/" + formatLatency(st.P99)
}

// formatLatency keeps about three significant digits: local signing is
// sub-millisecond, injected latency is hundreds of ms.
func formatLatency(ms float64) string {
	switch {
	case ms >= 100:
		return strconv.FormatFloat(ms, 'f', 0, 64)
	case ms >= 10:
		return strconv.FormatFloat(ms, 'f', 1, 64)
	default:
		return strconv.FormatFloat(ms, 'f', 2, 64)
	}
}

func formatBounds(lo, hi *float64) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("in [%s, %s]", formatMS(*lo), formatMS(*hi))
	case lo != nil:
		return ">= " + formatMS(*lo)
	case hi != nil:
		return "<= " + formatMS(*hi)
	}
	return "(no bound)"
}

func formatBlockIDs(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		switch {
		case id == "":
			out[i] = "nil"
		case len(id) > 12:
			out[i] = id[:12] + "…"
		default:
			out[i] = id
		}
	}
	return strings.Join(out, " vs ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// haltText describes a halt in one line, for the table and the HTML report.
func haltText(hl Halt) string {
	state := "then resumed"
	if !hl.Resumed {
		state = "until the end of the run"
	}
	return fmt.Sprintf("no commit after height %d for %s, %s", hl.FromHeight,
		(time.Duration(hl.DurationMS) * time.Millisecond).String(), state)
}
