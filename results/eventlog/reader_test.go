package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	lineStart = `{"t":"2025-01-01T00:00:00Z","kind":"run_start","scenario":"s"}`
	lineBlock = `{"t":"2025-01-01T00:00:01Z","kind":"block","height":1}`
	lineEnd   = `{"t":"2025-01-01T00:00:02Z","kind":"run_end","stop_reason":"heights"}`
)

func TestRead(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		kinds    []Kind
		errLine  int // 0: no error
		errMatch string
	}{
		{"complete", lineStart + "\n" + lineBlock + "\n" + lineEnd + "\n", []Kind{KindRunStart, KindBlock, KindRunEnd}, 0, ""},
		{"empty", "", nil, 0, ""},
		{"valid last line without newline is kept", lineStart + "\n" + lineBlock, []Kind{KindRunStart, KindBlock}, 0, ""},
		{"truncated last line is ignored", lineStart + "\n" + lineBlock + "\n" + lineEnd[:30], []Kind{KindRunStart, KindBlock}, 0, ""},
		{"torn write padded with NULs is ignored", lineStart + "\n" + "\x00\x00\x00", []Kind{KindRunStart}, 0, ""},
		{"blank lines are skipped", "\n" + lineStart + "\n\n  \n" + lineBlock + "\n", []Kind{KindRunStart, KindBlock}, 0, ""},
		{"CRLF line endings", lineStart + "\r\n" + lineBlock + "\r\n", []Kind{KindRunStart, KindBlock}, 0, ""},
		{
			"unknown kinds and fields are kept and ignored",
			lineStart + "\n" + `{"t":"2025-01-01T00:00:01Z","kind":"future_kind","shiny":true}` + "\n",
			[]Kind{KindRunStart, "future_kind"}, 0, "",
		},
		{"corrupt middle line", lineStart + "\n" + lineBlock[:20] + "\n" + lineEnd + "\n", []Kind{KindRunStart}, 2, "line 2:"},
		{"corrupt line counts blank lines", lineStart + "\n\n" + "not json\n" + lineEnd + "\n", []Kind{KindRunStart}, 3, "line 3:"},
		{"corrupt complete last line", lineStart + "\n" + lineEnd[:30] + "\n", []Kind{KindRunStart}, 2, "line 2:"},
		{"wrong field type", `{"t":"2025-01-01T00:00:00Z","kind":"block","height":"one"}` + "\n" + lineEnd + "\n", nil, 1, "line 1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := Read(strings.NewReader(tt.input))
			var kinds []Kind
			for _, ev := range evs {
				kinds = append(kinds, ev.Kind)
			}
			if strings.Join(kindStrings(kinds), ",") != strings.Join(kindStrings(tt.kinds), ",") {
				t.Errorf("kinds = %v, want %v", kinds, tt.kinds)
			}
			if tt.errLine == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var le *LineError
			if !errors.As(err, &le) || le.Line != tt.errLine || !strings.Contains(err.Error(), tt.errMatch) {
				t.Fatalf("err = %v, want a LineError for line %d", err, tt.errLine)
			}
		})
	}
}

func kindStrings(ks []Kind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

func TestReadLongLine(t *testing.T) {
	// A run_start with many validators is longer than bufio's default 64 KiB.
	var b strings.Builder
	b.WriteString(`{"t":"2025-01-01T00:00:00Z","kind":"run_start","validators":[`)
	for i := range 3000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name":"validator-with-a-long-name","address":"0123456789ABCDEF0123456789ABCDEF01234567","power":1,"signer":"local"}`)
	}
	b.WriteString("]}\n")
	evs, err := Read(strings.NewReader(b.String()))
	if err != nil || len(evs) != 1 || len(evs[0].Validators) != 3000 {
		t.Fatalf("got %d events, err %v", len(evs), err)
	}
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte(lineStart+"\ngarbage\n"+lineEnd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path)
	if err == nil || !strings.Contains(err.Error(), path+": line 2:") {
		t.Errorf("err = %v, want it to name the file and line", err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
}

// TestStreamAcrossChunks: a stream decoded in chunks, on several cores
// (StreamTorn) or on the caller's goroutine (StreamSerial), gives its
// events in order, the number of a corrupt line far into it, the offset
// of a torn last line, and lines longer than a chunk; every event is
// whole though chunks' arrays serve again.
func TestStreamAcrossChunks(t *testing.T) {
	var b bytes.Buffer
	const n = 20000
	for i := range n {
		node := strings.Repeat("x", i%300)
		if i == 7000 {
			node = strings.Repeat("y", 3*chunkBytes) // one line longer than a chunk
		}
		fmt.Fprintf(&b, `{"t":"2000-01-01T00:00:00Z","kind":"vote","height":%d,"node":"%s"}`+"\n", i+1, node)
	}
	data := b.Bytes()
	if len(data) < 8*chunkBytes {
		t.Fatalf("%d bytes: not enough chunks", len(data))
	}
	for name, stream := range map[string]func(io.Reader, func(*Event)) (*TornLine, error){"StreamTorn": StreamTorn, "StreamSerial": StreamSerial} {
		t.Run(name, func(t *testing.T) {
			var heights []int64
			if _, err := stream(bytes.NewReader(data), func(e *Event) {
				if want := strings.Repeat("x", int(e.Height-1)%300); e.Height != 7001 && e.Node != want {
					t.Fatalf("event of height %d has node of %d bytes, want %d", e.Height, len(e.Node), len(want))
				}
				heights = append(heights, e.Height)
			}); err != nil {
				t.Fatal(err)
			}
			if len(heights) != n {
				t.Fatalf("%d events, want %d", len(heights), n)
			}
			for i, h := range heights {
				if h != int64(i+1) {
					t.Fatalf("event %d is height %d: out of order", i, h)
				}
			}

			lines := bytes.Split(data, []byte("\n"))
			lines[14999] = []byte(`{"kind":`)
			got := 0
			_, err := stream(bytes.NewReader(bytes.Join(lines, []byte("\n"))), func(*Event) { got++ })
			var le *LineError
			if !errors.As(err, &le) || le.Line != 15000 || got != 14999 {
				t.Fatalf("corrupt line 15000: %v after %d events", err, got)
			}

			torn := data[:len(data)-20]
			got = 0
			tl, err := stream(bytes.NewReader(torn), func(*Event) { got++ })
			lastLine := int64(bytes.LastIndexByte(torn, '\n') + 1)
			if err != nil || tl == nil || got != n-1 || tl.Offset != lastLine || tl.Bytes != len(torn)-int(lastLine) {
				t.Fatalf("torn last line: %v, %+v after %d events (want offset %d)", err, tl, got, lastLine)
			}
		})
	}
}
