package results

import (
	"bytes"
	"encoding/xml"
	"github.com/valnet/valnet/results/eventlog"
	"strings"
	"testing"
)

// parsedJUnit is what a CI parser reads from junit.xml.
type parsedJUnit struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Errors   int    `xml:"errors,attr"`
		Time     string `xml:"time,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func junitOf(t *testing.T, s *Summary) parsedJUnit {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, s); err != nil {
		t.Fatal(err)
	}
	var p parsedJUnit
	if err := xml.Unmarshal(buf.Bytes(), &p); err != nil {
		t.Fatalf("junit.xml is not valid XML: %v\n%s", err, buf.String())
	}
	if len(p.Suites) != 1 {
		t.Fatalf("%d test suites", len(p.Suites))
	}
	return p
}

func TestJUnit(t *testing.T) {
	pass := eventlog.Expectation{Metric: "heights_committed", Min: fp(1)}
	fail := eventlog.Expectation{Metric: "missed_precommits", Validator: "v1", Max: fp(0)}
	typo := eventlog.Expectation{Metric: "missed_precommit", Max: fp(0)}
	t.Run("max_duration fails the run case; values and bounds in messages", func(t *testing.T) {
		evs := expectRun(eventlog.StopMaxDuration, pass, fail, typo)
		p := junitOf(t, Summarize(evs))
		su := p.Suites[0]
		if su.Name != "valnet unit" || su.Tests != 4 || su.Failures != 2 || su.Errors != 1 || p.Tests != 4 || p.Failures != 2 || p.Errors != 1 {
			t.Errorf("counts: %+v", p)
		}
		c := su.Cases
		if c[0].Name != RunReachedHeights || c[0].Failure == nil || !strings.Contains(c[0].Failure.Message, "stopped at max_duration after committing 3 heights (1..3)") {
			t.Errorf("run case: %+v", c[0])
		}
		if c[1].Name != "heights_committed >= 1" || c[1].Failure != nil || c[1].Error != nil {
			t.Errorf("passing case: %+v", c[1])
		}
		if c[2].Name != "missed_precommits[v1] <= 0" || c[2].Failure == nil || c[2].Failure.Message != "missed_precommits[v1] = 2, want <= 0" {
			t.Errorf("failing case: %+v", c[2])
		}
		if c[3].Error == nil || !strings.Contains(c[3].Error.Message, `unknown metric "missed_precommit"`) {
			t.Errorf("error case: %+v", c[3])
		}
	})
	t.Run("an errored run is an error", func(t *testing.T) {
		evs := []eventlog.Event{runStart("v1"), {Time: at(10), Kind: eventlog.KindRunEnd, StopReason: eventlog.StopError, Error: `node "v1" <crashed> & burned`}}
		c := junitOf(t, Summarize(evs)).Suites[0].Cases[0]
		if c.Error == nil || c.Error.Message != `stop_reason error: node "v1" <crashed> & burned` {
			t.Errorf("%+v", c)
		}
	})
	t.Run("a passing run", func(t *testing.T) {
		p := junitOf(t, Summarize(expectRun(eventlog.StopHeights, pass)))
		if p.Tests != 2 || p.Failures != 0 || p.Errors != 0 {
			t.Errorf("%+v", p)
		}
	})
}

func TestMarkdown(t *testing.T) {
	evs := expectRun(eventlog.StopHeights, eventlog.Expectation{Metric: "missed_precommits", Max: fp(0)})
	evs[0].Validators[0].Signer = "kms|<tmkms>"
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, Summarize(evs)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"## ❌ valnet unit: FAIL (1 expectation(s) failed)",
		"| v1 | kms\\|&lt;tmkms&gt; | 2/2 | network 1, unknown 1 |", // escaped
		"| ❌ | `missed_precommits[v1] <= 0` | 2 |",
		"| ✅ | `missed_precommits[v2] <= 0` | 0 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, out)
		}
	}
	var ok bytes.Buffer
	if err := WriteMarkdown(&ok, Summarize(expectRun(eventlog.StopHeights))); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ok.String(), "## ✅ valnet unit: PASS\n") || strings.Contains(ok.String(), "### Expectations") {
		t.Errorf("passing run:\n%s", ok.String())
	}
}
