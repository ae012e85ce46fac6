package results

import (
	"bytes"
	"strings"
	"testing"

	"github.com/valnet/valnet/results/eventlog"
)

// A MODEL run's event time is virtual: every duration line names its
// clock, and JUnit's time (what CI sums) is the wall time run_end carries.
func TestDurationsNameTheirClock(t *testing.T) {
	model := &eventlog.ModelInfo{Name: "valnet-sim"}
	cases := []struct {
		name      string
		s         Summary
		text      string
		junitTime string
	}{
		{"real", Summary{DurationMS: 25_100, WallMS: 25_300}, "25.1s", `time="25.300"`},
		{"real, before wall_ms", Summary{DurationMS: 25_100}, "25.1s", `time="25.100"`},
		{"model", Summary{DurationMS: 471_000, WallMS: 55_000, Model: model}, "7m51s of virtual time (MODEL), 55s wall", `time="55.000"`},
		{"model, before wall_ms", Summary{DurationMS: 471_000, Model: model}, "7m51s of virtual time (MODEL)", `time="0.000"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.s.Scenario, c.s.StopReason, c.s.OK = "d", eventlog.StopHeights, true
			if got := c.s.DurationText(); got != c.text {
				t.Errorf("DurationText = %q, want %q", got, c.text)
			}
			var b bytes.Buffer
			if err := WriteJUnit(&b, &c.s); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "<testsuite name=\"valnet d") || !strings.Contains(b.String(), c.junitTime) {
				t.Errorf("junit.xml lacks %s:\n%s", c.junitTime, b.String())
			}
			if c.s.Model != nil && !strings.Contains(b.String(), `<property name="virtual_duration_s" value="471.000">`) {
				t.Errorf("junit.xml lacks the virtual duration:\n%s", b.String())
			}
		})
	}
}
