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

// ReadFile reads a whole events.jsonl file into memory; see Read. Reports
// stream it instead (StreamFile, SummarizeFile).
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

// Read decodes an event stream, one JSON event per line, in stream order;
// see Stream, which Read collects.
func Read(r io.Reader) ([]Event, error) {
	var evs []Event
	err := Stream(r, func(ev *Event) { evs = append(evs, *ev) })
	return evs, err
}

// Stream decodes an event stream line by line and hands each event to fn
// in stream order, never holding more than one line: fn must copy what it
// keeps of *ev, which is reused for the next event.
//
// A final line without its newline that does not decode is the torn last
// write of a crashed run: it is dropped silently, so a crashed run still
// yields a report. Any other undecodable line is corruption and is returned
// as a *LineError (after the events before it were handed to fn). Blank
// lines are skipped. Events of unknown kinds are kept; consumers ignore
// kinds they do not know.
func Stream(r io.Reader, fn func(*Event)) error {
	_, err := streamTorn(r, fn)
	return err
}

// TornLine is the final line of a stream that ended without its newline
// and did not decode: the torn last write of a killed runner, ignored.
type TornLine struct {
	Offset int64 // byte offset of the line in the stream
	Bytes  int   // its length
}

// streamTorn is Stream, and says what torn last line it ignored (nil:
// none).
func streamTorn(r io.Reader, fn func(*Event)) (*TornLine, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var ev Event
	var off int64
	for n := 1; ; n++ {
		// ReadBytes, not Scanner: a run_start with many validators has no
		// line-length limit to trip over.
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		at := off
		off += int64(len(line))
		complete := err == nil // ended by '\n'
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			ev = Event{}
			if jerr := json.Unmarshal(trimmed, &ev); jerr != nil {
				if !complete {
					return &TornLine{Offset: at, Bytes: len(line)}, nil // truncated final line
				}
				return nil, &LineError{Line: n, Err: jerr}
			}
			fn(&ev)
		}
		if !complete {
			return nil, nil
		}
	}
}

// StreamFile streams an events.jsonl file through fn; see Stream.
func StreamFile(path string, fn func(*Event)) error {
	_, err := streamFileTorn(path, fn)
	return err
}

func streamFileTorn(path string, fn func(*Event)) (*TornLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	torn, err := streamTorn(f, fn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return torn, nil
}
