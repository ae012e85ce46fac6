package eventlog

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
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

// Stream decodes an event stream and hands each event to fn in stream
// order, holding a few chunks of lines at a time (memory does not grow
// with the stream): fn must copy what it keeps of *ev. The chunks are
// decoded on the machine's cores while fn takes the events in order.
//
// A final line without its newline that does not decode is the torn last
// write of a crashed run: it is dropped silently, so a crashed run still
// yields a report. Any other undecodable line is corruption and is returned
// as a *LineError (after the events before it were handed to fn). Blank
// lines are skipped. Events of unknown kinds are kept; consumers ignore
// kinds they do not know.
func Stream(r io.Reader, fn func(*Event)) error {
	_, err := StreamTorn(r, fn)
	return err
}

// TornLine is the final line of a stream that ended without its newline
// and did not decode: the torn last write of a killed runner, ignored.
type TornLine struct {
	Offset int64 // byte offset of the line in the stream
	Bytes  int   // its length
}

// chunkBytes is how much of a stream one chunk holds (whole lines; a
// longer line makes its chunk longer), firstChunkBytes the first.
const (
	chunkBytes      = 256 << 10
	firstChunkBytes = 16 << 10
)

// chunk is a run of whole lines of a stream and what they decode to.
type chunk struct {
	data  []byte
	line  int   // number of its first line (1-based)
	off   int64 // offset of data in the stream
	final bool  // the stream ends with it: its last line may lack '\n'

	events []Event
	err    error
	torn   *TornLine
	done   chan struct{}
}

// decode decodes c's lines in order, up to the first that does not.
func (c *chunk) decode() {
	defer close(c.done)
	data, n := c.data, c.line
	if need := bytes.Count(data, []byte{'\n'}) + 1; cap(c.events) < need {
		c.events = make([]Event, 0, need)
	}
	for off := 0; off < len(data); n++ {
		end := bytes.IndexByte(data[off:], '\n')
		complete := end >= 0
		if !complete {
			end = len(data) - off
		}
		line := data[off : off+end]
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			c.events = append(c.events, Event{})
			if err := decodeEvent(trimmed, &c.events[len(c.events)-1]); err != nil {
				c.events = c.events[:len(c.events)-1]
				if !complete && c.final {
					c.torn = &TornLine{Offset: c.off + int64(off), Bytes: len(line)} // truncated final line
				} else {
					c.err = &LineError{Line: n, Err: err}
				}
				return
			}
		}
		off += end + 1
	}
}

// streamTorn is Stream, and says what torn last line it ignored (nil:
// none). A stream of one chunk is decoded where it is read (a fuzzer
// needs the same path every time); a longer one is cut into chunks by
// one goroutine, decoded by workers, and its events handed to fn in
// order by the caller.
func StreamTorn(r io.Reader, fn func(*Event)) (*TornLine, error) {
	cut := chunker{r: r, line: 1}
	first, err := cut.next()
	if err != nil {
		return nil, err
	}
	if first == nil || first.final {
		if first == nil {
			return nil, nil
		}
		first.decode()
		return first.hand(fn)
	}
	workers := min(runtime.GOMAXPROCS(0), 4)
	order := make(chan *chunk, 2*workers) // chunks in stream order
	work := make(chan *chunk, 2*workers)
	quit := make(chan struct{})
	// Handed chunks' event arrays serve again (fn keeps no *Event): a
	// stream of millions of lines allocated ~670 bytes a line otherwise.
	spare := make(chan []Event, 4*workers+2)
	var readErr error
	go func() {
		defer close(order)
		defer close(work)
		for c := first; c != nil; {
			for _, ch := range [2]chan *chunk{order, work} {
				select {
				case ch <- c:
				case <-quit:
					return
				}
			}
			if c.final {
				return
			}
			if c, readErr = cut.next(); readErr != nil {
				return
			}
			if c != nil {
				select {
				case c.events = <-spare:
				default:
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case c, ok := <-work:
					if !ok {
						return
					}
					c.decode()
				case <-quit:
					return
				}
			}
		}()
	}
	defer wg.Wait()
	defer close(quit)
	for c := range order {
		<-c.done
		if torn, err := c.hand(fn); err != nil || torn != nil {
			return torn, err
		}
		select {
		case spare <- c.recycle():
		default:
		}
	}
	return nil, readErr
}

// StreamSerial is StreamTorn on the caller's goroutine alone: each chunk
// is read, decoded and handed in turn. For a reader beside a busier
// goroutine (the live summary beside the model, runner/live.go): on 2
// cores, decoding workers took turns with it.
func StreamSerial(r io.Reader, fn func(*Event)) (*TornLine, error) {
	cut := chunker{r: r, line: 1}
	var spare []Event
	for {
		c, err := cut.next()
		if err != nil || c == nil {
			return nil, err
		}
		c.events = spare
		c.decode()
		if torn, err := c.hand(fn); err != nil || torn != nil {
			return torn, err
		}
		spare = c.recycle()
	}
}

// recycle takes c's handed events' array, emptied, for another chunk
// (fn kept no *Event); what the events pointed to goes.
func (c *chunk) recycle() []Event {
	clear(c.events)
	events := c.events[:0]
	c.events = nil
	return events
}

// hand gives fn c's events, then says how c ended.
func (c *chunk) hand(fn func(*Event)) (*TornLine, error) {
	for i := range c.events {
		fn(&c.events[i])
	}
	return c.torn, c.err
}

// chunker cuts a stream into chunks of whole lines; the last holds what
// follows the last newline.
type chunker struct {
	r     io.Reader
	carry []byte
	line  int
	off   int64
	done  bool
}

// next is the next chunk; nil when the stream is over.
func (k *chunker) next() (*chunk, error) {
	for !k.done {
		size := chunkBytes
		if k.off == 0 {
			size = firstChunkBytes // most streams read are small ones
		}
		buf := make([]byte, len(k.carry), max(size, 2*len(k.carry)))
		copy(buf, k.carry)
		n, err := io.ReadFull(k.r, buf[len(k.carry):cap(buf)])
		buf = buf[:len(k.carry)+n]
		final := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !final {
			return nil, err
		}
		cut := len(buf)
		if !final {
			cut = bytes.LastIndexByte(buf, '\n') + 1
			if cut == 0 {
				k.carry = buf // one line longer than the chunk: read on
				continue
			}
		}
		c := &chunk{data: buf[:cut], line: k.line, off: k.off, final: final, done: make(chan struct{})}
		k.done = final
		k.line += bytes.Count(c.data, []byte{'\n'})
		k.off += int64(cut)
		k.carry = buf[cut:]
		if len(c.data) > 0 || final {
			return c, nil
		}
	}
	return nil, nil
}

// StreamFile streams an events.jsonl file through fn; see Stream.
func StreamFile(path string, fn func(*Event)) error {
	_, err := StreamFileTorn(path, fn)
	return err
}

func StreamFileTorn(path string, fn func(*Event)) (*TornLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	torn, err := StreamTorn(f, fn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return torn, nil
}
