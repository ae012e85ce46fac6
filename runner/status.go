package runner

import (
	"fmt"
	"io"
	"time"

	"github.com/valnet/valnet/results"
)

// statusLine shows progress while a run goes: one line rewritten in place
// on a terminal, a plain line every plainEvery otherwise (CI logs). A
// stall (no commit for the halt threshold, see results.Progress.Stall) is
// printed on its own line as soon as it is seen and whenever its
// explanation changes, so that a chain that never starts does not look
// like a quiet run.
type statusLine struct {
	w          io.Writer
	terminal   bool
	target     int64
	plainEvery time.Duration
	lastPlain  time.Time
	drawn      bool
	stall      string // the stall last printed
}

func (s *statusLine) text(p results.Progress) string {
	out := fmt.Sprintf("height %d/%d  round %d  elapsed %s  missed precommits %d  sign errors %d",
		p.Height, s.target, p.Round, p.Elapsed.Truncate(100*time.Millisecond), p.Missed, p.SignErrors)
	if p.Stall != "" {
		out += "  STALLED"
	}
	return out
}

func (s *statusLine) update(p results.Progress, now time.Time) {
	if s.w == nil {
		return
	}
	if p.Stall != "" && p.Stall != s.stall {
		if s.terminal && s.drawn {
			fmt.Fprint(s.w, "\r\033[K")
		}
		fmt.Fprintf(s.w, "valnet: %s\n", p.Stall)
		s.drawn = false
	}
	s.stall = p.Stall
	if s.terminal {
		fmt.Fprintf(s.w, "\r\033[K%s", s.text(p))
		s.drawn = true
		return
	}
	if now.Sub(s.lastPlain) >= s.plainEvery {
		s.lastPlain = now
		fmt.Fprintln(s.w, s.text(p))
	}
}

// done ends the live line so that what follows starts on a fresh line.
func (s *statusLine) done() {
	if s.w != nil && s.terminal && s.drawn {
		fmt.Fprintln(s.w)
	}
}
