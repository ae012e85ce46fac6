package runner

import (
	"fmt"
	"io"
	"time"

	"github.com/valnet/valnet/results"
)

// statusLine shows progress while a run goes: one line rewritten in place
// on a terminal, a plain line every plainEvery otherwise (CI logs).
type statusLine struct {
	w          io.Writer
	terminal   bool
	target     int64
	plainEvery time.Duration
	lastPlain  time.Time
	drawn      bool
}

func (s *statusLine) text(p results.Progress) string {
	return fmt.Sprintf("height %d/%d  round %d  elapsed %s  missed precommits %d  sign errors %d",
		p.Height, s.target, p.Round, p.Elapsed.Truncate(100*time.Millisecond), p.Missed, p.SignErrors)
}

func (s *statusLine) update(p results.Progress, now time.Time) {
	if s.w == nil {
		return
	}
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
