package results

import (
	"bufio"
	"fmt"
	"github.com/valnet/valnet/results/eventlog"
	"io"
	"strconv"
)

// SuiteRun is one scenario of a suite (valnet run with several scenarios):
// its summary when it ran, else why it could not run.
type SuiteRun struct {
	Name    string   // the scenario's name, or the argument that named it
	Source  string   // the file or built-in it came from
	Dir     string   // its run directory ("" when it never got one)
	Summary *Summary // nil: the run could not be done (Error says why)
	Error   string
}

// Exit codes of a run, as valnet run exits with them.
const (
	ExitOK     = 0 // ran, and every expectation held
	ExitFailed = 1 // ran, and some expectation failed
	ExitError  = 2 // bad input, or the run could not be done (or was interrupted)
)

// RunExitCode is the exit code a run's summary gives.
func RunExitCode(s *Summary) int {
	switch {
	case s == nil || s.StopReason == eventlog.StopInterrupted || s.StopReason == eventlog.StopError:
		return ExitError
	case !s.OK:
		return ExitFailed
	}
	return ExitOK
}

// ExitCode is the run's exit code: ExitError when it could not be done
// (an error, or no summary).
func (r SuiteRun) ExitCode() int {
	if r.Summary == nil || r.Error != "" {
		return ExitError
	}
	return RunExitCode(r.Summary)
}

// SuiteExitCode is the worst exit code of the runs (2 > 1 > 0).
func SuiteExitCode(runs []SuiteRun) int {
	worst := ExitOK
	for _, r := range runs {
		worst = max(worst, r.ExitCode())
	}
	return worst
}

// SuiteRan is the name of the test case each scenario of a suite has
// for whether its run could be done at all.
const SuiteRan = "ran"

// WriteSuiteJUnit writes a suite's junit.xml: a testsuite per scenario
// (as WriteJUnit's, its expectations a test case each) with a first test
// case "ran", an error when the run could not be done or was cut short.
func WriteSuiteJUnit(w io.Writer, runs []SuiteRun) error {
	doc := junitSuites{Name: "valnet suite"}
	var secs float64
	for _, r := range runs {
		class := "valnet." + orDash(r.Name)
		ran := junitCase{Name: SuiteRan, Classname: class, Time: "0"}
		var suite junitSuite
		if r.Summary != nil {
			suite = junitSuiteOf(r.Summary)
			secs += r.Summary.WallSeconds()
			if r.ExitCode() == ExitError {
				msg := "stop_reason " + r.Summary.StopReason
				switch {
				case r.Error != "":
					msg = r.Error
				case r.Summary.Error != "":
					msg += ": " + r.Summary.Error
				}
				ran.Error = &junitProblem{Type: "error", Message: msg, Text: msg}
			}
		} else {
			suite = junitSuite{Name: "valnet " + orDash(r.Name), Time: "0",
				Properties: []junitProperty{{"source", r.Source}}}
			ran.Error = &junitProblem{Type: "error", Message: r.Error, Text: r.Error}
		}
		if r.Dir != "" {
			suite.Properties = append(suite.Properties, junitProperty{"run_dir", r.Dir})
		}
		suite.Cases = append([]junitCase{ran}, suite.Cases...)
		suite.count()
		doc.Suites = append(doc.Suites, suite)
		doc.Tests += suite.Tests
		doc.Failures += suite.Failures
		doc.Errors += suite.Errors
	}
	doc.Time = strconv.FormatFloat(secs, 'f', 3, 64)
	return encodeJUnit(w, doc)
}

// WriteSuiteMarkdown writes suite.md: the suite's verdict, a row per
// scenario, then each run's summary.md (WriteMarkdown), for a CI step
// summary. interrupted: Ctrl-C ended the suite (its exit is 2 whatever
// the runs gave).
func WriteSuiteMarkdown(w io.Writer, runs []SuiteRun, interrupted bool) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	counts := [3]int{}
	for _, r := range runs {
		counts[r.ExitCode()]++
	}
	mark, how := "✅", ""
	if SuiteExitCode(runs) != ExitOK || interrupted {
		mark = "❌"
	}
	if interrupted {
		how = " (interrupted: exit 2)"
	}
	p("# %s valnet suite: %d scenarios, %d passed, %d failed, %d could not run%s\n\n", mark, len(runs), counts[ExitOK], counts[ExitFailed], counts[ExitError], how)
	p("| scenario | backend | verdict | result | run directory |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range runs {
		verdict := [3]string{"✅ passed", "❌ failed", "⚠️ could not run"}[r.ExitCode()]
		backend, result := "-", r.Error
		if s := r.Summary; s != nil {
			backend = s.Backend
			if s.Model != nil {
				backend += " (MODEL)"
			}
			result = ResultLine(s)
		}
		p("| `%s` | %s | %s | %s | `%s` |\n", codeCell(r.Name), mdCell(backend), verdict, mdCell(result), codeCell(orDash(r.Dir)))
	}
	for _, r := range runs {
		p("\n")
		if r.Summary == nil {
			p("## ⚠️ valnet %s: could not run\n\n%s\n", mdCell(r.Name), mdCell(r.Error))
			continue
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := WriteMarkdown(bw, r.Summary); err != nil {
			return err
		}
	}
	return bw.Flush()
}
