package compare

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/valnet/valnet/results"
)

// Write writes the side-by-side text report of c, then the crossings of
// the thresholds checked (if any were given) and a last line "RESULT:
// PASS (...)" or "RESULT: FAIL (n threshold(s) crossed)". Rows where
// neither run has a value are left out.
func Write(w io.Writer, c *Comparison, ths []Threshold, crossings []Crossing) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	side := func(r Run) string {
		dir := r.Dir
		if dir == "" {
			dir = "-"
		}
		what := fmt.Sprintf("scenario %s, seed %d: %s", orDash(r.Scenario), r.Seed, r.Result)
		if r.Model != "" {
			what += "; " + r.Model
		}
		return dir + " (" + what + ")"
	}
	p("A: %s\nB: %s\n", side(c.A), side(c.B))
	for _, r := range []struct {
		name string
		run  Run
	}{{"A", c.A}, {"B", c.B}} {
		if na := results.UnavailableText(r.run.Unavailable); na != "" {
			p("%s: %s\n", r.name, na)
		}
	}
	for _, d := range c.Different {
		p("warning: the runs differ in %s: this compares unrelated runs\n", d)
	}

	p("\nChain\n")
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  metric\tA\tB\tdelta")
	for _, d := range c.Chain {
		if d.A != nil || d.B != nil {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", d.Metric, opt(d.A), opt(d.B), formatDelta(d))
		}
	}
	tw.Flush()

	if len(c.Validators) > 0 {
		p("\nValidators (matched by name)\n")
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  validator\tmetric\tA\tB\tdelta")
		for _, v := range c.Validators {
			for _, d := range v.Metrics {
				if d.A == nil && d.B == nil {
					continue
				}
				name := d.Metric
				if d.Phase != "" {
					name += " " + d.Phase
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", v.Name, name, opt(d.A), opt(d.B), formatDelta(d))
			}
		}
		tw.Flush()
	}
	if len(c.OnlyInA) > 0 {
		p("\nOnly in A: %s\n", strings.Join(c.OnlyInA, ", "))
	}
	if len(c.OnlyInB) > 0 {
		p("\nOnly in B: %s\n", strings.Join(c.OnlyInB, ", "))
	}

	if len(ths) > 0 {
		specs := make([]string, len(ths))
		for i, t := range ths {
			specs[i] = t.Metric + t.Op + thresholdText(t)
		}
		p("\nThresholds: %s\n", strings.Join(specs, ", "))
		for _, x := range crossings {
			p("  FAIL  %s\n", x)
		}
		if len(crossings) == 0 {
			p("\nRESULT: PASS (no threshold crossed)\n")
		} else {
			p("\nRESULT: FAIL (%d threshold(s) crossed)\n", len(crossings))
		}
	}
	return bw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func opt(v *float64) string {
	if v == nil {
		return "-"
	}
	return results.FormatMS(*v)
}

// formatDelta is "+3 (+12.5%)", "0", or "-" when a side has no value.
func formatDelta(d Delta) string {
	if d.Delta == nil {
		return "-"
	}
	s := signed(*d.Delta)
	if d.DeltaPct != nil && *d.DeltaPct != 0 {
		s += " (" + signed(*d.DeltaPct) + "%)"
	}
	return s
}
