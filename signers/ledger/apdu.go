package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// APDU constants of the Tendermint validator app (tendermint/ledger-validator-app,
// src/app_main.h and docs/APDUSPEC.md).
const (
	CLA = 0x56

	InsGetVersion = 0x00
	InsPubKey     = 0x01
	InsSign       = 0x02

	// MaxPackets is the most chunks one signature can take: P1/P2 are bytes.
	MaxPackets = 255
	// MaxChunkSize is the most data one command APDU carries (Lc is a byte).
	MaxChunkSize = 255
	// DefaultChunkSize is what tmkms (ledgertm) sends; one exchange carries
	// any CometBFT vote or proposal sign bytes.
	DefaultChunkSize = 250
)

// Status words the app answers with.
const (
	SWOK              uint16 = 0x9000
	SWWrongLength     uint16 = 0x6700
	SWBufferTooSmall  uint16 = 0x6983
	SWParse           uint16 = 0x6984
	SWDenied          uint16 = 0x6985
	SWKeysNotInit     uint16 = 0x6986
	SWInsNotSupported uint16 = 0x6D00
	SWClaNotSupported uint16 = 0x6E00
	SWAppNotOpen      uint16 = 0x6E01 // what some firmwares answer from the dashboard
)

// Errors a status word maps to. Test with errors.Is; errors.As with
// *StatusError gives the status word itself.
var (
	ErrDenied      = errors.New("device refused: vote state regression (height/round/step not higher than its last signature)")
	ErrParse       = errors.New("device could not parse the sign bytes: the app must accept CometBFT v1 protobuf canonical votes (see docs/ledger.md)")
	ErrKeysNotInit = errors.New("device keys not initialised (or the request was rejected on the device)")
	ErrAppNotOpen  = errors.New("wrong CLA: open the Tendermint validator app on the device")
)

// StatusError is a status word other than 0x9000.
type StatusError struct {
	SW uint16
}

func (e *StatusError) sentinel() error {
	switch e.SW {
	case SWDenied:
		return ErrDenied
	case SWParse:
		return ErrParse
	case SWKeysNotInit:
		return ErrKeysNotInit
	case SWClaNotSupported, SWAppNotOpen:
		return ErrAppNotOpen
	}
	return nil
}

func (e *StatusError) Error() string {
	if s := e.sentinel(); s != nil {
		return fmt.Sprintf("ledger: status 0x%04X: %v", e.SW, s)
	}
	return fmt.Sprintf("ledger: device returned status 0x%04X", e.SW)
}

// Is lets errors.Is(err, ErrDenied) and friends match.
func (e *StatusError) Is(target error) bool {
	s := e.sentinel()
	return s != nil && s == target
}

// StatusWordError returns nil for 0x9000, else a *StatusError.
func StatusWordError(sw uint16) error {
	if sw == SWOK {
		return nil
	}
	return &StatusError{SW: sw}
}

// SplitStatus splits a raw response (data followed by SW1 SW2) as the app
// writes it to the transport.
func SplitStatus(raw []byte) (data []byte, sw uint16, err error) {
	if len(raw) < 2 {
		return nil, 0, fmt.Errorf("ledger: response of %d bytes has no status word", len(raw))
	}
	n := len(raw) - 2
	return raw[:n], binary.BigEndian.Uint16(raw[n:]), nil
}

// ledger-go's transports (HID, Zemu) strip the status word and return
// errors.New(ErrorMessage(sw)); these tags recover the word from that text
// so a real device yields the same typed errors as the model.
var ledgerGoTags = map[string]uint16{
	"[APDU_CODE_EXECUTION_ERROR]":          0x6400,
	"[APDU_CODE_WRONG_LENGTH]":             0x6700,
	"[APDU_CODE_EMPTY_BUFFER]":             0x6982,
	"[APDU_CODE_OUTPUT_BUFFER_TOO_SMALL]":  0x6983,
	"[APDU_CODE_DATA_INVALID]":             0x6984,
	"[APDU_CODE_CONDITIONS_NOT_SATISFIED]": 0x6985,
	"[APDU_CODE_COMMAND_NOT_ALLOWED]":      0x6986,
	"[APDU_CODE_BAD_KEY_HANDLE]":           0x6A80,
	"[APDU_CODE_INVALID_P1P2]":             0x6B00,
	"[APDU_CODE_INS_NOT_SUPPORTED]":        0x6D00,
	"[APDU_CODE_CLA_NOT_SUPPORTED]":        0x6E00,
	"[APDU_CODE_APP_NOT_OPEN]":             0x6E01,
}

const ledgerGoUnknownPrefix = "APDU Error Code from Ledger Device: 0x"

// statusOf recovers a status word from an Exchange error, if it carries one.
func statusOf(err error) (uint16, bool) {
	var se *StatusError
	if errors.As(err, &se) {
		return se.SW, true
	}
	msg := err.Error()
	for tag, sw := range ledgerGoTags {
		if strings.HasPrefix(msg, tag) {
			return sw, true
		}
	}
	if rest, ok := strings.CutPrefix(msg, ledgerGoUnknownPrefix); ok {
		if v, perr := strconv.ParseUint(rest, 16, 16); perr == nil {
			return uint16(v), true
		}
	}
	switch msg { // ledger-go's own names for these two
	case "APDU_CODE_UNKNOWN":
		return 0x6F00, true
	case "APDU_CODE_SIGN_VERIFY_ERROR":
		return 0x6F01, true
	}
	return 0, false
}

// ParseResponse turns what Device.Exchange returned into the answer data
// or a typed error: a status word becomes a *StatusError (matching
// ErrDenied, ErrParse, ...), anything else is a transport error.
func ParseResponse(data []byte, err error) ([]byte, error) {
	if err == nil {
		return data, nil
	}
	if sw, ok := statusOf(err); ok {
		return nil, StatusWordError(sw)
	}
	return nil, fmt.Errorf("ledger: exchange failed: %w", err)
}

// command builds one command APDU: CLA INS P1 P2 Lc data. Lc is always
// written (0 for no data) because ledger-go checks it against the length.
func command(ins, p1, p2 byte, data []byte) []byte {
	c := make([]byte, 5+len(data))
	c[0], c[1], c[2], c[3], c[4] = CLA, ins, p1, p2, byte(len(data))
	copy(c[5:], data)
	return c
}

// VersionAPDU is the GET_VERSION command.
func VersionAPDU() []byte { return command(InsGetVersion, 0, 0, nil) }

// PubKeyAPDU is the PUBLIC_KEY_ED25519 command.
func PubKeyAPDU() []byte { return command(InsPubKey, 0, 0, nil) }

// SignAPDUs splits payload into SIGN_ED25519 commands of at most chunkSize
// data bytes: P1 is the 1-based packet index, P2 the packet count. The app
// resets its buffer on P1=1 and signs when P1 == P2.
func SignAPDUs(payload []byte, chunkSize int) ([][]byte, error) {
	if chunkSize < 1 || chunkSize > MaxChunkSize {
		return nil, fmt.Errorf("ledger: chunk size %d outside 1..%d", chunkSize, MaxChunkSize)
	}
	if len(payload) == 0 {
		return nil, errors.New("ledger: nothing to sign")
	}
	n := (len(payload) + chunkSize - 1) / chunkSize
	if n > MaxPackets {
		return nil, fmt.Errorf("ledger: %d bytes need %d packets of %d; the app takes at most %d",
			len(payload), n, chunkSize, MaxPackets)
	}
	out := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		end := min((i+1)*chunkSize, len(payload))
		out = append(out, command(InsSign, byte(i+1), byte(n), payload[i*chunkSize:end]))
	}
	return out, nil
}

// Version is the GET_VERSION answer.
type Version struct {
	Mode                byte // 0xFF: test mode build; 0x00: release
	Major, Minor, Patch byte
}

// TestMode reports a test-mode build of the app.
func (v Version) TestMode() bool { return v.Mode == 0xFF }

func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.TestMode() {
		s += " (test mode)"
	}
	return s
}

// ParseVersion decodes the GET_VERSION answer (status word already removed).
func ParseVersion(data []byte) (Version, error) {
	if len(data) < 4 {
		return Version{}, fmt.Errorf("ledger: version answer has %d bytes, want 4", len(data))
	}
	return Version{Mode: data[0], Major: data[1], Minor: data[2], Patch: data[3]}, nil
}

// MaxMajor is the newest app major version whose protocol this package
// speaks: CLA/INS/chunking above are unchanged through the 0.x releases;
// a later major may change them, so it is refused rather than guessed at.
const MaxMajor = 1

// CheckVersion refuses app versions this package cannot speak to.
func CheckVersion(v Version) error {
	if v.Mode != 0x00 && v.Mode != 0xFF {
		return fmt.Errorf("ledger: unknown app mode byte 0x%02X (want 0x00 release or 0xFF test): is this the Tendermint validator app?", v.Mode)
	}
	if v.Major > MaxMajor {
		return fmt.Errorf("ledger: app version %s is newer than the protocol valnet speaks (major <= %d)", v, MaxMajor)
	}
	return nil
}
