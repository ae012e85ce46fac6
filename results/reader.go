package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// LineError reports an events.jsonl line that is not a valid event.
type LineError struct {
	Line int // 1-based
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ReadFile reads an events.jsonl file; see Read.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	evs, err := Read(f)
	if err != nil {
		return evs, fmt.Errorf("%s: %w", path, err)
	}
	return evs, nil
}

// Read decodes an event stream, one JSON event per line, in stream order.
//
// A final line without its newline that does not decode is the torn last
// write of a crashed run: it is dropped silently, so a crashed run still
// yields a report. Any other undecodable line is corruption and is returned
// as a *LineError (with the events read before it). Blank lines are skipped.
// Events of unknown kinds are kept; consumers ignore kinds they do not know.
func Read(r io.Reader) ([]Event, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var evs []Event
	for n := 1; ; n++ {
		// ReadBytes, not Scanner: a run_start with many validators has no
		// line-length limit to trip over.
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return evs, err
		}
		complete := err == nil // ended by '\n'
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			var ev Event
			if jerr := json.Unmarshal(trimmed, &ev); jerr != nil {
				if !complete {
					return evs, nil // truncated final line
				}
				return evs, &LineError{Line: n, Err: jerr}
			}
			evs = append(evs, ev)
		}
		if !complete {
			return evs, nil
		}
	}
}
