package eventlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"reflect"
	"testing"
	"time"
)

// TestCodecMatchesEncodingJSON: events.jsonl is written and read as
// encoding/json would: the same bytes for every event of the testdata
// stream, for an event with every field set (nested ones too) to awkward
// values, and for the zero event; decoding gives the same values.
func TestCodecMatchesEncodingJSON(t *testing.T) {
	var events []Event
	f, err := os.Open("../testdata/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	for _, s := range []string{"plain", "<a href=\"x\">&amp;</a>", "tab\there\nnewline\u2028\u2029", "\x00\x1f\x7f", "bad utf-8 \xff\xfe", "😀 ünïcödé"} {
		var e Event
		fill(reflect.ValueOf(&e).Elem(), s, 0)
		events = append(events, e)
	}
	events = append(events, Event{})
	kinds := map[Kind]bool{}
	lines := newLineEncoder(0)
	for i := range events {
		e := &events[i]
		kinds[e.Kind] = true
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := EncodeEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("event %d (%s) encodes differently:\ngot  %s\nwant %s", i, e.Kind, got, want)
		}
		lines.buf = append(lines.buf[:0], "before\n"...)
		if err := lines.encode(e); err != nil {
			t.Fatal(err)
		}
		if got := lines.buf; string(got) != "before\n"+string(want)+"\n" {
			t.Fatalf("event %d (%s): the Writer's line encoder appends %q, want %q", i, e.Kind, got, "before\n"+string(want)+"\n")
		}
		var a, b Event
		errA, errB := json.Unmarshal(want, &a), decodeEvent(want, &b)
		if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
			t.Fatalf("event %d (%s) decodes differently: %v / %v\n%+v\n%+v", i, e.Kind, errA, errB, a, b)
		}
	}
	if len(kinds) < 10 {
		t.Fatalf("only %d kinds of event compared", len(kinds))
	}
	for _, bad := range []string{`{"t":`, `{"kind":"vote","height":"x"}`, `[1,2]`, `{"height":1e400}`, `nul`} {
		var a, b Event
		if errA, errB := json.Unmarshal([]byte(bad), &a), decodeEvent([]byte(bad), &b); (errA == nil) != (errB == nil) {
			t.Errorf("%q: encoding/json says %v, the codec %v", bad, errA, errB)
		}
	}
}

// fill sets every field of v reachable from it to something not zero,
// strings to s.
func fill(v reflect.Value, s string, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type() == reflect.TypeOf(time.Duration(0)) {
			v.SetInt(int64(1500 * time.Millisecond))
		} else {
			v.SetInt(-7)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(9)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(math.Pi * 1e21)
	case reflect.Pointer:
		if depth < 4 {
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem(), s, depth+1)
		}
	case reflect.Slice:
		if depth < 4 {
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
			for i := range 2 {
				fill(v.Index(i), s, depth+1)
			}
		}
	case reflect.Map:
		if depth < 4 {
			m := reflect.MakeMap(v.Type())
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, s, depth+1)
			fill(e, s, depth+1)
			m.SetMapIndex(k, e)
			v.Set(m)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 2, 3, 4, 5, 678901234, time.FixedZone("x", 3600))))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), s, depth+1)
			}
		}
	}
}
