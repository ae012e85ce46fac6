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
