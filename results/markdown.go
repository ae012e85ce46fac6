package results

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteMarkdown writes summary.md: a compact Markdown summary meant for a
// CI step summary (e.g. appended to $GITHUB_STEP_SUMMARY): the verdict with
// ✅/❌, chain metrics, one row per validator, round changes, expectations
// and faults. Like the table, it shows only what s holds.
func WriteMarkdown(w io.Writer, s *Summary) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }

	mark := "❌"
	if s.OK {
		mark = "✅"
	}
	if overloaded(s) {
		p("> ⚠️ **%s**\n\n", overloadedLine(s))
	}
	title := mdCell(orDash(s.Scenario))
	if s.Model != nil {
		title += " (MODEL)"
	}
	p("## %s valnet %s: %s\n\n", mark, title, mdCell(strings.TrimPrefix(ResultLine(s), "RESULT: ")))
	p("backend `%s` · chain `%s` · seed %d · stop reason `%s` · duration %s\n",
		orDash(s.Backend), orDash(s.ChainID), s.Seed, s.StopReason, s.DurationText())
	if n := nodesText(s); n != "" {
		p("\nnodes: %s\n", n)
	}
	if label, notes, na := modelHeader(s); label != "" {
		p("\n**%s**\n", mdCell(label))
		if len(notes) > 0 {
			p("\nThe model simplifies:\n\n")
			for _, n := range notes {
				p("- %s\n", mdCell(n))
			}
		}
		if na != "" {
			p("\n**%s**\n", mdCell(na))
		}
	}
	if s.Error != "" {
		p("\n**Error:** %s\n", mdCell(s.Error))
	}
	if n := len(s.NodeErrors); n > 0 {
		p("\n**Warning:** %d node error(s), events may be missing (first: %s: %s)\n", n, mdCell(orDash(s.NodeErrors[0].Node)), mdCell(s.NodeErrors[0].Error))
	}

	p("\n### Chain\n\n| metric | value |\n| --- | --- |\n")
	p("| heights committed | %s |\n", heightsText(s.Heights))
	p("| heights with round change | %s |\n", roundsText(s.Rounds))
	bi := s.BlockIntervalMS
	if bi.Count > 0 {
		p("| block interval ms p50 / p95 / max | %s / %s / %s |\n", formatMS(bi.P50), formatMS(bi.P95), formatMS(bi.Max))
	} else {
		p("| block interval ms p50 / p95 / max | - |\n")
	}
	for _, hl := range s.Halts {
		p("| halt | %s |\n", mdCell(haltText(hl)))
	}
	p("| double signs | %d |\n", s.DoubleSigns)
	if s.Load != nil {
		p("| load | %s |\n", mdCell(loadText(s.Load)))
	}
	if s.Host != nil {
		p("| host | %s |\n", hostText(s.Host))
	}

	if len(s.Validators) > 0 {
		p("\n### Validators\n\nmissed: precommits absent from the next block / heights counted; late: rounds whose vote came after +2/3 at most nodes; quorum: heights whose +2/3 waited for its precommit; sign latency ms p50/p99\n\n")
		p("| validator | signer | missed | missed by cause | nil | late prevotes / precommits | quorum | proposals | proposal | prevote | precommit |\n")
		p("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, v := range s.Validators {
			l := v.SignLatencyMS
			p("| %s | %s | %d/%d | %s | %d | %s | %s | %d/%d | %s | %s | %s |\n",
				mdCell(v.Name), mdCell(orDash(v.Signer)), v.MissedPrecommits, v.PrecommitsCounted, v.MissedByCause,
				v.NilPrecommits, s.lateText(&v, " / "), s.quorumText(&v), v.Proposals.Made, v.Proposals.Expected,
				p50p99(l.Proposal), p50p99(l.Prevote), p50p99(l.Precommit))
		}
	}

	mdTables := func(tables []textTable) {
		for _, table := range tables {
			tab := table.lines()
			p("\n")
			for i, row := range tab {
				cells := make([]string, len(row))
				for j, c := range row {
					cells[j] = mdCell(c)
				}
				p("| %s |\n", strings.Join(cells, " | "))
				if i == 0 {
					p("|%s\n", strings.Repeat(" --- |", len(row)))
				}
			}
		}
	}
	if dt := newDeviceTables(s); dt != nil {
		p("\n### Shared signing devices\n\n%s\n", dt.Note)
		mdTables(dt.Tables())
	}
	if tt := newThresholdTables(s); tt != nil {
		p("\n### Threshold signers (MODEL)\n\n%s\n", tt.Note)
		mdTables(tt.Tables())
	}
	if nt := newPeerNodeTables(s); nt != nil {
		p("\n### %s\n\n%s\n", nt.Title(), nt.Note)
		mdTables(nt.Tables())
	}

	if len(s.RoundChanges) > 0 {
		p("\n### Round changes\n\n| height | round | cause | detail |\n| ---: | ---: | --- | --- |\n")
		for _, rc := range s.RoundChanges {
			p("| %d | %d | %s | %s |\n", rc.Height, rc.Round, rc.Cause, mdCell(rc.Detail))
		}
	}

	if len(s.Expectations) > 0 {
		p("\n### Expectations\n\n| | expectation | value |\n| --- | --- | ---: |\n")
		for _, e := range shownExpectations(s.Expectations) {
			mark := "✅"
			if !e.OK {
				mark = "❌"
			}
			if e.Warning != "" {
				mark += " ⚠️"
			}
			p("| %s | `%s` | %s |\n", mark, codeCell(ExpectationName(e)), mdCell(expectationValue(e)))
		}
	}

	if len(s.Faults) > 0 {
		p("\n### Faults\n\n| action | target | ms since start | detail |\n| --- | --- | --- | --- |\n")
		for _, f := range s.Faults {
			end := "…"
			if f.EndMS > 0 {
				end = strconv.FormatInt(f.EndMS, 10)
			}
			p("| %s | %s | %d..%s | %s |\n", mdCell(f.Action), mdCell(f.Target), f.StartMS, end, mdCell(f.Detail))
		}
	}
	return bw.Flush()
}

// mdCell keeps text inside one Markdown table cell and out of HTML: CI
// renderers accept inline HTML, so a signer label like "a<b>" would vanish.
var mdCellReplacer = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ", "<", "&lt;", ">", "&gt;")

func mdCell(s string) string { return mdCellReplacer.Replace(s) }

// codeCell is text for a code span in a table cell: no backticks, and
// pipes escaped (GitHub honours \| inside code spans in tables).
var codeCellReplacer = strings.NewReplacer("`", "'", "|", `\|`, "\n", " ")

func codeCell(s string) string { return codeCellReplacer.Replace(s) }
