package ledger

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ledger_go "github.com/zondax/ledger-go"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func golden300() []byte {
	p := make([]byte, 300)
	for i := range p {
		p[i] = byte(i)
	}
	return p
}

func TestSignAPDUsGolden(t *testing.T) {
	for _, chunk := range []int{250, 48} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			packets, err := SignAPDUs(golden300(), chunk)
			if err != nil {
				t.Fatal(err)
			}
			got := hexLines(packets)
			path := filepath.Join("testdata", fmt.Sprintf("sign_300_chunk%d.golden", chunk))
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("packets differ from %s:\n%s\nwant:\n%s", path, got, want)
			}
		})
	}
}

// The structure the golden files hold, checked independently of them.
func TestSignAPDUsStructure(t *testing.T) {
	payload := golden300()
	for _, tc := range []struct{ chunk, packets, lastLen int }{
		{250, 2, 50}, {48, 7, 12}, {255, 2, 45}, {300 / 2, 2, 150}, {1, 255, 1},
	} {
		packets, err := SignAPDUs(payload[:min(len(payload), tc.chunk*tc.packets)], tc.chunk)
		if err != nil {
			t.Fatalf("chunk %d: %v", tc.chunk, err)
		}
		if len(packets) != tc.packets {
			t.Fatalf("chunk %d: %d packets, want %d", tc.chunk, len(packets), tc.packets)
		}
		var joined []byte
		for i, p := range packets {
			if p[0] != CLA || p[1] != InsSign || int(p[2]) != i+1 || int(p[3]) != tc.packets || int(p[4]) != len(p)-5 {
				t.Fatalf("chunk %d packet %d header % x", tc.chunk, i+1, p[:5])
			}
			joined = append(joined, p[5:]...)
		}
		if n := len(packets[len(packets)-1]) - 5; n != tc.lastLen {
			t.Fatalf("chunk %d: last packet carries %d bytes, want %d", tc.chunk, n, tc.lastLen)
		}
		if !bytes.Equal(joined, payload[:len(joined)]) {
			t.Fatalf("chunk %d: payload not reassembled", tc.chunk)
		}
	}
}

func TestSignAPDUsErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		chunk int
		want  string
	}{
		{"chunk 0", 10, 0, "outside 1..255"},
		{"chunk 256", 10, 256, "outside 1..255"},
		{"chunk -1", 10, -1, "outside 1..255"},
		{"empty", 0, 250, "nothing to sign"},
		{"256 packets", 256, 1, "at most 255"},
		{"too long", 255*250 + 1, 250, "at most 255"},
	} {
		_, err := SignAPDUs(make([]byte, tc.n), tc.chunk)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	if p, err := SignAPDUs(make([]byte, 255*250), 250); err != nil || len(p) != 255 {
		t.Errorf("255 full packets: %d, %v", len(p), err)
	}
}

func TestFixedCommands(t *testing.T) {
	if got := fmt.Sprintf("% x", VersionAPDU()); got != "56 00 00 00 00" {
		t.Errorf("GET_VERSION %s", got)
	}
	if got := fmt.Sprintf("% x", PubKeyAPDU()); got != "56 01 00 00 00" {
		t.Errorf("GET_PUBKEY %s", got)
	}
}

func TestStatusErrors(t *testing.T) {
	for _, tc := range []struct {
		sw       uint16
		sentinel error
		text     string
	}{
		{0x6985, ErrDenied, "vote state regression"},
		{0x6984, ErrParse, "CometBFT v1 protobuf canonical votes"},
		{0x6986, ErrKeysNotInit, "not initialised"},
		{0x6E00, ErrAppNotOpen, "open the Tendermint validator app"},
		{0x6E01, ErrAppNotOpen, "open the Tendermint validator app"},
		{0x6D00, nil, "0x6D00"},
		{0x6F42, nil, "0x6F42"},
	} {
		err := StatusWordError(tc.sw)
		var se *StatusError
		if !errors.As(err, &se) || se.SW != tc.sw {
			t.Fatalf("0x%04X: %v is not a StatusError with that word", tc.sw, err)
		}
		if !strings.Contains(err.Error(), tc.text) {
			t.Errorf("0x%04X: %q lacks %q", tc.sw, err, tc.text)
		}
		for _, s := range []error{ErrDenied, ErrParse, ErrKeysNotInit, ErrAppNotOpen} {
			if errors.Is(err, s) != (s == tc.sentinel) {
				t.Errorf("0x%04X: errors.Is(%v) = %v", tc.sw, s, !(s == tc.sentinel))
			}
		}
	}
	if StatusWordError(0x9000) != nil {
		t.Error("0x9000 is not an error")
	}
}

// A real device answers through ledger-go, which turns the status word
// into text; ParseResponse must recover the same typed errors from it.
func TestParseResponseLedgerGoErrors(t *testing.T) {
	for _, sw := range []uint16{0x6400, 0x6700, 0x6982, 0x6983, 0x6984, 0x6985, 0x6986, 0x6A80,
		0x6B00, 0x6D00, 0x6E00, 0x6E01, 0x6F00, 0x6F01, 0x6511, 0x5515} {
		_, err := ParseResponse([]byte{1}, errors.New(ledger_go.ErrorMessage(sw)))
		var se *StatusError
		if !errors.As(err, &se) || se.SW != sw {
			t.Errorf("0x%04X via %q: got %v", sw, ledger_go.ErrorMessage(sw), err)
		}
	}
	_, err := ParseResponse(nil, errors.New(ledger_go.ErrorMessage(0x6985)))
	if !errors.Is(err, ErrDenied) {
		t.Errorf("ledger-go 0x6985 is not ErrDenied: %v", err)
	}
	// Own StatusError passes through, possibly wrapped.
	_, err = ParseResponse(nil, fmt.Errorf("wrapped: %w", &StatusError{SW: 0x6984}))
	if !errors.Is(err, ErrParse) {
		t.Errorf("wrapped StatusError lost: %v", err)
	}
	// A transport failure is neither a status nor silently dropped.
	_, err = ParseResponse(nil, errors.New("usb: pipe broken"))
	var se *StatusError
	if err == nil || errors.As(err, &se) || !strings.Contains(err.Error(), "pipe broken") {
		t.Errorf("transport error: %v", err)
	}
	if data, err := ParseResponse([]byte{7}, nil); err != nil || !bytes.Equal(data, []byte{7}) {
		t.Errorf("success: %v %v", data, err)
	}
}

func TestSplitStatus(t *testing.T) {
	data, sw, err := SplitStatus([]byte{1, 2, 0x90, 0x00})
	if err != nil || sw != 0x9000 || !bytes.Equal(data, []byte{1, 2}) {
		t.Errorf("got % x %04x %v", data, sw, err)
	}
	if _, _, err := SplitStatus([]byte{0x90}); err == nil {
		t.Error("1 byte has no status word")
	}
}

func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		raw  []byte
		ok   bool
		want string
	}{
		{[]byte{0, 0, 6, 0}, true, "0.6.0"},
		{[]byte{0xFF, 0, 4, 1}, true, "0.4.1 (test mode)"},
		{[]byte{0, 1, 0, 0}, true, "1.0.0"},
		{[]byte{0, 2, 0, 0}, false, "newer than the protocol"},
		{[]byte{0x01, 0, 6, 0}, false, "unknown app mode"},
		{[]byte{0, 1}, false, "want 4"},
	} {
		v, err := ParseVersion(tc.raw)
		if err == nil {
			err = CheckVersion(v)
		}
		if tc.ok {
			if err != nil || v.String() != tc.want {
				t.Errorf("% x: %v %v", tc.raw, v, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("% x: err %v, want %q", tc.raw, err, tc.want)
		}
	}
}
