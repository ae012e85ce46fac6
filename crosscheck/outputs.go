package crosscheck

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/valnet/valnet/internal/atomicfile"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/sweep"
)

// Files of a crosscheck directory.
const (
	JSONFile     = "crosscheck.json"
	MarkdownFile = "crosscheck.md"
)

// fileJSON is crosscheck.json (docs/crosscheck.md has the contract).
type fileJSON struct {
	Identity    Identity   `json:"identity"`
	Description string     `json:"description,omitempty"`
	Repeat      int        `json:"repeat"`
	Goals       Goals      `json:"goals"`
	Complete    bool       `json:"complete"`
	Verdict     string     `json:"verdict"` // pass, fail or incomplete: the exit code's reason
	Cases       []caseJSON `json:"cases"`
}

type caseJSON struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Scenario    string   `json:"scenario"`
	Set         []string `json:"set"`
	// Repeat is the runs a side this case had to make: its own repeat
	// key, else the check's (the file's repeat).
	Repeat  int    `json:"repeat"`
	Verdict string `json:"verdict"`
	// HostOverloaded lists the sides that ran on an overloaded host
	// (results.OverloadedNotice): their values reflect the machine.
	HostOverloaded []Side              `json:"host_overloaded"`
	Runs           map[Side][]runJSON  `json:"runs"`
	Values         map[Side]Values     `json:"values,omitempty"`
	Goals          []GoalResult        `json:"goals"`
	Backends       map[Side]string     `json:"backends"`
	Plans          map[Side]planOrigin `json:"plans"`
}

// planOrigin says which scenario a side ran.
type planOrigin struct {
	Source string `json:"source"`
	Seed   int64  `json:"run_seed"`
}

// runJSON is one run: where it is and how it ended (its every metric is
// in its own summary.json).
type runJSON struct {
	Repeat         int    `json:"repeat"`
	Seed           int64  `json:"seed"`
	Dir            string `json:"dir"`
	StopReason     string `json:"stop_reason"`
	ExpectationsOK bool   `json:"expectations_ok"`
	HostOverloaded bool   `json:"host_overloaded"`
	Error          string `json:"error,omitempty"`
	Resumed        bool   `json:"resumed,omitempty"`
}

// attempted is whether a run ran or failed (not still to do).
func attempted(r sweep.RunRecord) bool { return r.StopReason != "" || r.Error != "" }

// Verdict is the crosscheck's: incomplete when a case is, else fail when a
// case failed, else pass.
func (o *Outcome) Verdict() string {
	switch o.ExitCode() {
	case ExitOK:
		return VerdictPass
	case ExitFailed:
		return VerdictFail
	}
	return VerdictIncomplete
}

func (c *Check) fileJSON(o *Outcome) fileJSON {
	f := fileJSON{Identity: c.Identity, Description: c.Grid.Description, Repeat: c.Repeat, Goals: c.Grid.Goals,
		Complete: o.ExitCode() != ExitBadInput, Verdict: o.Verdict(), Cases: []caseJSON{}}
	for i := range o.Cases {
		cr := &o.Cases[i]
		cj := caseJSON{Name: cr.Name, Description: cr.Description, Scenario: cr.Scenario, Set: []string{},
			Repeat: c.Repeats(cr.PreparedCase), Verdict: cr.Verdict(), HostOverloaded: cr.Overloaded(), Runs: map[Side][]runJSON{}, Values: cr.Values,
			Goals: cr.Goals, Backends: map[Side]string{}, Plans: map[Side]planOrigin{}}
		if cj.HostOverloaded == nil {
			cj.HostOverloaded = []Side{}
		}
		if cj.Goals == nil {
			cj.Goals = []GoalResult{}
		}
		for _, st := range cr.Set {
			cj.Set = append(cj.Set, st.String())
		}
		for _, s := range Sides {
			cj.Backends[s] = c.Backend(s)
			cj.Plans[s] = planOrigin{Source: cr.Plans[s].Source, Seed: cr.Plans[s].Run.Seed}
			cj.Runs[s] = []runJSON{}
			for _, r := range cr.Runs[s] {
				if attempted(r) {
					cj.Runs[s] = append(cj.Runs[s], runJSON{Repeat: r.Repeat, Seed: r.Seed, Dir: r.Dir, StopReason: r.StopReason,
						ExpectationsOK: r.ExpectationsOK, HostOverloaded: r.HostOverloaded, Error: r.Error, Resumed: r.Resumed})
				}
			}
		}
		f.Cases = append(f.Cases, cj)
	}
	return f
}

func (c *Check) writeJSON(o *Outcome) error {
	return atomicfile.WriteJSON(filepath.Join(c.OutDir, JSONFile), 0o644, c.fileJSON(o))
}

// WriteFiles writes crosscheck.json and crosscheck.md for what the
// outcome holds (complete or not).
func (c *Check) WriteFiles(o *Outcome) error {
	if err := c.writeJSON(o); err != nil {
		return err
	}
	return atomicfile.WriteWith(filepath.Join(c.OutDir, MarkdownFile), 0o644, func(w io.Writer) error { return c.WriteMarkdown(w, o) })
}

// goalColumns head the table's goal columns, in GoalNames order.
var goalColumns = map[string]string{
	GoalMissedRate:   "missed precommits, worst validator",
	GoalRoundChanges: "round changes per 20 heights",
	GoalIntervalP50:  "block interval p50",
	GoalIntervalP95:  "block interval p95",
	GoalHalts:        "halts",
}

// WriteMarkdown writes crosscheck.md: one row per case, each goal's cell
// "verdict: model / real (difference)", failing goals in bold, then the
// failing goals one by one, the cases' settings, and the runs that could
// not be done.
func (c *Check) WriteMarkdown(w io.Writer, o *Outcome) error {
	var b strings.Builder
	g := c.Grid.Goals
	fmt.Fprintf(&b, "# Crosscheck of grid %s: model side %s, real side %s\n\n", c.Grid.Name, c.Model, c.Real)
	if c.Grid.Description != "" {
		b.WriteString(c.Grid.Description + "\n\n")
	}
	fmt.Fprintf(&b, "The model side ran on backend `%s`, the real side on `%s`; %s per case and side; %s.\n", c.Model, c.Real, c.repeatNote(), c.seedNote())
	fmt.Fprintf(&b, "Goals: missed-precommit rate of every validator within ±%s pp (the worst validator is shown), "+
		"heights with a round change within ±%s per 20 heights, block interval p50 and p95 within ±%s %% of the real value, "+
		"halts after the same heights with durations within ±%s %%.\n",
		trim(g.MissedRatePP), trim(g.RoundChangesPer20), trim(g.BlockIntervalPct), trim(g.HaltDurationPct))
	b.WriteString("Each cell is model / real (model − real); n.a. where neither side has the value.\n\n")
	switch v := o.Verdict(); v {
	case VerdictPass:
		b.WriteString("Every goal is met (or n.a.) in every case.\n\n")
	case VerdictFail:
		b.WriteString("**Some goals fail**: they are in bold, and listed below the table.\n\n")
	default:
		b.WriteString("**Incomplete**: some runs did not finish; rerun the same command (same --out) to do the rest.\n\n")
	}
	header := []string{"case", "verdict", "heights committed"}
	for _, name := range GoalNames {
		header = append(header, goalColumns[name])
	}
	header = append(header, "host")
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(header)) + "\n")
	var failing []string
	for i := range o.Cases {
		cr := &o.Cases[i]
		row := []string{"`" + cr.Name + "`", verdictCell(cr.Verdict())}
		if cr.Goals == nil {
			row = append(row, fmt.Sprintf("%d of %d runs finished", finishedRuns(cr), 2*c.Repeats(cr.PreparedCase)))
			for range GoalNames {
				row = append(row, "–")
			}
		} else {
			row = append(row, fmt.Sprintf("%s / %s", trim(cr.Values[Model].HeightsCommitted), trim(cr.Values[Real].HeightsCommitted)))
			for _, gr := range cr.Goals {
				row = append(row, goalCell(gr))
				if gr.Verdict == VerdictFail {
					failing = append(failing, fmt.Sprintf("- `%s`, %s: %s", cr.Name, goalColumns[gr.Goal], goalDetail(gr)))
				}
			}
		}
		row = append(row, hostCell(cr.Overloaded()))
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	if len(failing) > 0 {
		b.WriteString("\n## Failing goals\n\n" + strings.Join(failing, "\n") + "\n")
	}
	var over []string
	for i := range o.Cases {
		if sides := o.Cases[i].Overloaded(); len(sides) > 0 {
			over = append(over, fmt.Sprintf("`%s` (%s)", o.Cases[i].Name, joinSides(sides)))
		}
	}
	if len(over) > 0 {
		fmt.Fprintf(&b, "\n**%s**: %s (summary.json `host.overloaded`). The verdicts stand as measured.\n",
			results.OverloadedNotice, strings.Join(over, ", "))
	}
	b.WriteString("\n## Cases\n\n")
	for i := range o.Cases {
		cr := &o.Cases[i]
		line := fmt.Sprintf("- `%s`: scenario %s", cr.Name, cr.Scenario)
		for _, st := range cr.Set {
			line += fmt.Sprintf(", `%s`", st)
		}
		if cr.Description != "" {
			line += ": " + cr.Description
		}
		b.WriteString(line + "\n")
	}
	if len(o.Failed) > 0 {
		b.WriteString("\n## Runs that could not be done\n\n")
		for _, err := range o.Failed {
			fmt.Fprintf(&b, "- %s\n", err)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func finishedRuns(cr *CaseResult) int {
	n := 0
	for _, s := range Sides {
		for _, r := range cr.Runs[s] {
			if r.Finished() {
				n++
			}
		}
	}
	return n
}

// repeatNote is "3 runs" or, where cases set their own repeat, each
// case's: "2 runs (partition: 3)".
func (c *Check) repeatNote() string {
	var own []string
	for _, pc := range c.Cases {
		if n := c.Repeats(pc); n != c.Repeat {
			own = append(own, fmt.Sprintf("%s: %d", pc.Name, n))
		}
	}
	if len(own) == 0 {
		return plural(c.Repeat, "run")
	}
	return plural(c.Repeat, "run") + " (" + strings.Join(own, ", ") + ")"
}

func (c *Check) seedNote() string {
	base := "each case's run.seed"
	if c.Config.Seed != nil {
		base = fmt.Sprint(*c.Config.Seed)
	}
	most := 0
	for _, pc := range c.Cases {
		most = max(most, c.Repeats(pc))
	}
	if most <= 1 {
		return "seed " + base + ", the same on both sides"
	}
	return fmt.Sprintf("repeat r runs with seed S + r − 1 on both sides (S = %s); values are means over the repeats", base)
}

func verdictCell(v string) string {
	switch v {
	case VerdictFail:
		return "**FAIL**"
	case VerdictIncomplete:
		return "**incomplete**"
	}
	return v
}

// goalCell is "pass: 1180 ms / 1200 ms (−1.7 %)", bold when it fails.
func goalCell(gr GoalResult) string {
	cell := fmt.Sprintf("%s / %s", gr.ModelText, gr.RealText)
	if gr.Diff != nil {
		cell += " (" + signed(*gr.Diff) + unitSuffix(gr.Unit) + ")"
	}
	switch gr.Verdict {
	case VerdictFail:
		if gr.Note != "" {
			cell += ": " + gr.Note
		}
		return "**FAIL: " + cell + "**"
	case VerdictNA:
		return "n.a. (" + gr.Note + ")"
	}
	return "pass: " + cell
}

// goalDetail is a failing goal in words, for the list below the table.
func goalDetail(gr GoalResult) string {
	s := fmt.Sprintf("model %s, real %s", gr.ModelText, gr.RealText)
	if gr.Diff != nil {
		s += fmt.Sprintf(" (%s%s; goal ±%s%s)", signed(*gr.Diff), unitSuffix(gr.Unit), trim(gr.Tolerance), unitSuffix(gr.Unit))
	}
	if gr.Note != "" {
		s += "; " + gr.Note
	}
	return s
}

// unitSuffix is " pp", " %", or "" for round changes per 20 heights
// (the column says it).
func unitSuffix(unit string) string {
	if unit == unitPer20 {
		return ""
	}
	return " " + unit
}

func hostCell(sides []Side) string {
	if len(sides) == 0 {
		return "ok"
	}
	return "**" + joinSides(sides) + " overloaded**"
}

// joinSides is "real side", "model side" or "both sides".
func joinSides(sides []Side) string {
	if len(sides) == len(Sides) {
		return "both sides"
	}
	return string(sides[0]) + " side"
}

// signed is a difference with its sign: +1.5, −0.3 (a true minus), 0.0.
func signed(v float64) string {
	t := formatNumber(v)
	switch {
	case strings.Trim(t, "-0.") == "":
		return formatNumber(0)
	case v > 0:
		return "+" + t
	}
	return "−" + strings.TrimPrefix(t, "-")
}

// trim is a number without trailing zeros: 5, 0.5, 12.5.
func trim(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%g", v), ".0") }
