package results

import (
	"encoding/xml"
	"fmt"
	"github.com/valnet/valnet/results/eventlog"
	"io"
	"strconv"
	"strings"
)

// JUnit shapes: the subset of the de-facto JUnit XML schema that CI
// parsers (GitHub, GitLab, Jenkins, CircleCI) agree on.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"` // a warning on the verdict
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// RunReachedHeights is the name of the JUnit test case that checks the
// run got to run.heights.
const RunReachedHeights = "run reached run.heights"

// WriteJUnit writes junit.xml: one testsuite "valnet <scenario>" (with
// " (MODEL)" and model properties for a model run) with a
// test case "run reached run.heights" (a failure at max_duration, an error
// when the run errored or was interrupted) and one test case per
// expectation result, named like "missed_precommits[slow] <= 5". A value
// out of bounds is a failure whose message carries the value and the
// bounds; an expectation that could not be evaluated is an error.
func WriteJUnit(w io.Writer, s *Summary) error {
	suite := junitSuiteOf(s)
	return encodeJUnit(w, junitSuites{Name: "valnet", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Time: suite.Time, Suites: []junitSuite{suite}})
}

// junitSuiteOf is the testsuite of one run's summary.
func junitSuiteOf(s *Summary) junitSuite {
	class := "valnet." + orDash(s.Scenario)
	// JUnit time is wall time (CI sums it); a MODEL run's virtual
	// time is a property.
	secs := strconv.FormatFloat(s.WallSeconds(), 'f', 3, 64)
	suite := junitSuite{
		Name: "valnet " + orDash(s.Scenario),
		Time: secs,
		Properties: []junitProperty{
			{"scenario", s.Scenario}, {"backend", s.Backend}, {"chain_id", s.ChainID},
			{"seed", strconv.FormatInt(s.Seed, 10)}, {"stop_reason", s.StopReason},
		},
		SystemOut: ResultLine(s),
	}
	if overloaded(s) {
		suite.Properties = append(suite.Properties, junitProperty{"warning", OverloadedNotice})
		suite.SystemOut = overloadedLine(s) + "\n" + suite.SystemOut
	}
	if m := s.Model; m != nil {
		// A model's verdicts must not pass for a real network's in CI:
		// the suite's name says MODEL, its properties what the model is.
		suite.Name += " (MODEL)"
		suite.Properties = append(suite.Properties, junitProperty{"model", ModelLabel(m)},
			junitProperty{"model_calibration", m.Calibration}, junitProperty{"model_vote_events", strconv.FormatBool(m.VoteEvents)},
			junitProperty{"virtual_duration_s", strconv.FormatFloat(float64(s.DurationMS)/1000, 'f', 3, 64)})
		for _, n := range m.Notes {
			suite.Properties = append(suite.Properties, junitProperty{"model_note", n})
		}
		head := ModelLabel(m)
		if na := unavailableText(s.Unavailable); na != "" {
			suite.Properties = append(suite.Properties, junitProperty{"unavailable", strings.Join(s.Unavailable, ",")})
			head += "\n" + na
		}
		suite.SystemOut = head + "\n" + suite.SystemOut
	}

	run := junitCase{Name: RunReachedHeights, Classname: class, Time: "0"}
	switch s.StopReason {
	case eventlog.StopHeights:
	case eventlog.StopMaxDuration:
		run.Failure = &junitProblem{Type: s.StopReason, Message: stoppedEarly(s), Text: stoppedEarly(s)}
	default:
		msg := "stop_reason " + s.StopReason
		if s.Error != "" {
			msg += ": " + s.Error
		}
		run.Error = &junitProblem{Type: s.StopReason, Message: msg, Text: msg}
	}
	suite.Cases = append(suite.Cases, run)

	for _, e := range shownExpectations(s.Expectations) {
		c := junitCase{Name: ExpectationName(e), Classname: class, Time: "0"}
		if e.Warning != "" {
			c.SystemOut = "warning: " + e.Warning
		}
		switch {
		case e.Error != "":
			c.Error = &junitProblem{Type: "expectation", Message: e.Error, Text: e.Error}
		case !e.OK:
			msg := ExpectationFailure(e)
			c.Failure = &junitProblem{Type: "expectation", Message: msg, Text: msg}
		}
		suite.Cases = append(suite.Cases, c)
	}

	suite.count()
	return suite
}

// count sets the suite's test, failure and error counts from its cases.
func (suite *junitSuite) count() {
	suite.Tests, suite.Failures, suite.Errors = 0, 0, 0
	for _, c := range suite.Cases {
		suite.Tests++
		if c.Failure != nil {
			suite.Failures++
		}
		if c.Error != nil {
			suite.Errors++
		}
	}
}

// encodeJUnit writes doc as an XML document.
func encodeJUnit(w io.Writer, doc junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// ExpectationFailure says how a failed expectation failed: its value
// against its bounds.
func ExpectationFailure(e ExpectationResult) string {
	msg := fmt.Sprintf("%s = %s, want %s", expectationSubject(e), formatMS(e.Value), formatBounds(e.Min, e.Max))
	if e.Note != "" {
		msg += " (" + e.Note + ")"
	}
	return msg
}

// stoppedEarly says how far a run stopped by max_duration got.
func stoppedEarly(s *Summary) string {
	return fmt.Sprintf("stopped at max_duration after committing %d heights%s", s.Heights.Committed, heightRange(s.Heights))
}
