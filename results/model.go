package results

import (
	"fmt"
	"github.com/valnet/valnet/results/eventlog"
	"slices"
	"strconv"
	"strings"
)

// A MODEL run (run_start's Model set) is labelled as one in every report,
// and what its stream does not hold is reported as unknown: a model run
// with vote_events false has no vote events, so the values read off them
// cannot be told, and 0 would read as "no problem".

// ModelLabel is how every report names a model run: "MODEL: valnet-sim
// (virtual time, not real nodes)"; "" for a run of real nodes (m nil).
func ModelLabel(m *eventlog.ModelInfo) string {
	if m == nil {
		return ""
	}
	return "MODEL: " + orDash(m.Name) + " (virtual time, not real nodes)"
}

// NotRecorded is what a report shows in place of a value the run did not
// record (a name of Summary.Unavailable).
const NotRecorded = "n/a (not recorded)"

// noVoteEvents reports whether the stream of a run with this run_start
// deliberately holds no vote events: a model run with vote_events false.
// A real run always records them (an old or damaged stream that lacks
// them is judged as before).
func noVoteEvents(start *eventlog.Event) bool {
	return start != nil && start.Model != nil && !start.Model.VoteEvents
}

// VoteEventValues are the values derived from vote events alone, each a
// metric of `expect` and a summary.json key of the same name (per
// validator, or quorum_heights at the top): a model run without vote
// events lists them in Summary.Unavailable.
var VoteEventValues = []string{"late_prevotes", "late_precommits", "quorum_critical", "quorum_heights"}

// cannotTellVotes opens the detail of a cause that needed vote events the
// run did not record; the cause itself is the cause list's "unknown".
const cannotTellVotes = "cannot tell without vote events (vote_events: false): "

// summarizeUnavailable lists in s.Unavailable what the run cannot tell:
// nothing for a run of real nodes or a model run with vote events; for a
// model run without, VoteEventValues and, when a halt's cause needed vote
// events, every halts_<cause> metric (that halt could be any cause).
// halts and halts_unresumed are told by the blocks and stay.
func summarizeUnavailable(s *Summary, start *eventlog.Event) {
	if !noVoteEvents(start) {
		return
	}
	s.Unavailable = slices.Clone(VoteEventValues)
	if slices.ContainsFunc(s.Halts, func(h Halt) bool { return h.needsVotes }) {
		for _, c := range HaltCauses {
			s.Unavailable = append(s.Unavailable, HaltMetric(c))
		}
	}
}

// unavailable reports whether the run cannot tell the metric or summary
// key name (see Summary.Unavailable).
func (s *Summary) unavailable(name string) bool { return slices.Contains(s.Unavailable, name) }

// UnavailableError is why a metric of Summary.Unavailable has no value:
// the run did not record the events it is derived from.
type UnavailableError struct{ Metric string }

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("cannot tell: %s needs vote receipt events, which this model run did not record (vote_events: false)", e.Metric)
}

// naOr is text for a report cell: "n/a" when the run cannot tell name
// (the report's unavailableText says why), else the value's own text.
func (s *Summary) naOr(name, text string) string {
	if s.unavailable(name) {
		return "n/a"
	}
	return text
}

// unavailableText is the line a report shows for a run that cannot tell
// some values (its Summary.Unavailable), e.g. "n/a (not recorded):
// late_prevotes, late_precommits, quorum_critical, quorum_heights; this
// model run recorded no vote receipt events (vote_events: false)"; ""
// when it can tell them all.
func unavailableText(names []string) string { return UnavailableText(names) }

// UnavailableText says which values a model run did not record, "" for
// none: the line every report prints for them.
func UnavailableText(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return NotRecorded + ": " + strings.Join(names, ", ") + "; this model run recorded no vote receipt events (vote_events: false)"
}

// modelHeader is what a text report says under its run line about a
// model run: the label and calibration, one line per note (what the model
// simplifies), and unavailableText; all empty for a run of real nodes.
func modelHeader(s *Summary) (label string, notes []string, na string) {
	if s.Model == nil {
		return "", nil, ""
	}
	label = ModelLabel(s.Model)
	if s.Model.Calibration != "" {
		label += "; calibration " + s.Model.Calibration
	}
	return label, s.Model.Notes, unavailableText(s.Unavailable)
}

// lateText and quorumText are a validator's late prevotes and
// precommits ("1/0") and quorum-critical heights ("3/7") as the reports
// show them, or n/a.
func (s *Summary) lateText(v *ValidatorSummary, sep string) string {
	if s.unavailable("late_prevotes") && s.unavailable("late_precommits") {
		return "n/a"
	}
	return s.naOr("late_prevotes", strconv.Itoa(v.LatePrevotes)) + sep + s.naOr("late_precommits", strconv.Itoa(v.LatePrecommits))
}

func (s *Summary) quorumText(v *ValidatorSummary) string {
	if s.unavailable("quorum_critical") || s.unavailable("quorum_heights") {
		return "n/a"
	}
	return fmt.Sprintf("%d/%d", v.QuorumCritical, s.QuorumHeights)
}
