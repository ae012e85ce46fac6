package eventlog

import gojson "github.com/goccy/go-json"

// An event's line in events.jsonl, in one place: the Writer encodes it
// (EncodeEvent), the reader decodes it. goccy/go-json writes the bytes encoding/json
// writes (field order, escaping, omitempty; TestCodecMatchesEncodingJSON
// checks every kind of event) at about half its cost, and reads at a
// third: events.jsonl is the one road from a run to its report, and a
// sim run writes millions of lines.

// EncodeEvent is ev's line in events.jsonl, without the newline.
func EncodeEvent(ev *Event) ([]byte, error) { return gojson.Marshal(ev) }

func decodeEvent(line []byte, ev *Event) error { return gojson.Unmarshal(line, ev) }

// lineEncoder appends events' lines to buf, each EncodeEvent's bytes and
// a newline, without allocating each line (the Writer's encoder: a sim
// writes millions, and every allocation is work for the collector that
// runs beside the model).
type lineEncoder struct {
	buf []byte
	enc *gojson.Encoder
}

// newLineEncoder starts with room for size bytes of lines.
func newLineEncoder(size int) *lineEncoder {
	l := &lineEncoder{buf: make([]byte, 0, size)}
	l.enc = gojson.NewEncoder(appendTo{&l.buf}) // escapes HTML, as Marshal
	return l
}

// encode appends ev's line; on an error it appends nothing.
func (l *lineEncoder) encode(ev *Event) error { return l.enc.Encode(ev) }

// appendTo is an io.Writer that appends to a byte slice.
type appendTo struct{ b *[]byte }

func (a appendTo) Write(p []byte) (int, error) {
	*a.b = append(*a.b, p...)
	return len(p), nil
}
