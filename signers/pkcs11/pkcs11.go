// Package pkcs11 signs with an Ed25519 key held in a PKCS#11 token: a
// hardware security module (a YubiHSM 2 through yubihsm_pkcs11.so, a
// network HSM) or SoftHSM2, a software token that speaks the same API.
//
// The private key never leaves the token: signatures are made by the
// token with CKM_EDDSA, and the public key is read from the token's public
// key object of the same label. A Signer has the method set of
// signers.KeySigner (PubKey, Sign) plus Close, so signers.Build can put the
// double-sign guard in front of it; this package does not import signers,
// which imports it.
//
// The binding (github.com/miekg/pkcs11) needs cgo. In a CGO_ENABLED=0
// build the package still compiles, and every entry point returns
// ErrUnavailable.
package pkcs11

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/valnet/valnet/internal/secret"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
)

// Config says which key of which token to sign with.
type Config struct {
	Module   string // path of the PKCS#11 library (.so)
	Token    string // token label (CKA_LABEL of the token); or Slot with HasSlot
	Slot     uint
	HasSlot  bool
	KeyLabel string // CKA_LABEL of the private key and of its public key
	PIN      []byte // user PIN; Open copies it
	// SoftHSMConf, if set, is the SoftHSM2 configuration file the module
	// must be initialised with (SOFTHSM2_CONF). SoftHSM reads it once, at
	// C_Initialize, so Open refuses a module that is already initialised
	// in this process with another one. Provision sets it.
	SoftHSMConf string
}

// Name is how the token is called in labels and messages: its label, or
// "slot N".
func (c Config) Name() string {
	if c.HasSlot && c.Token == "" {
		return "slot " + strconv.FormatUint(uint64(c.Slot), 10)
	}
	return c.Token
}

// what names the key and token in messages.
func (c Config) what() string {
	if c.HasSlot && c.Token == "" {
		return fmt.Sprintf("key %q in slot %d of %s", c.KeyLabel, c.Slot, c.Module)
	}
	return fmt.Sprintf("key %q on token %q (%s)", c.KeyLabel, c.Token, c.Module)
}

// Defaults of provisioned tokens.
const (
	// DefaultKeyLabel is the key label Provision uses when none is given.
	DefaultKeyLabel = "consensus"
	// MaxTokenLabel is PKCS#11's limit: CK_TOKEN_INFO.label is 32 bytes.
	MaxTokenLabel = 32
	tokenPrefix   = "valnet-"
)

// ErrUnavailable is returned by every entry point of a build without cgo.
var ErrUnavailable = errors.New("PKCS#11 is not available in this valnet binary: it was built with CGO_ENABLED=0, and the PKCS#11 binding (github.com/miekg/pkcs11) needs cgo; rebuild with CGO_ENABLED=1")

// DefaultTokenLabel is the token a provisioned validator gets when the
// scenario names none: "valnet-<validator>", shortened with a hash of the
// name when that would not fit PKCS#11's 32-byte token label.
func DefaultTokenLabel(validator string) string {
	label := tokenPrefix + validator
	if len(label) <= MaxTokenLabel {
		return label
	}
	sum := sha256.Sum256([]byte(validator))
	keep := MaxTokenLabel - len(tokenPrefix) - 1 - 8
	return tokenPrefix + validator[:keep] + "-" + hex.EncodeToString(sum[:4])
}

// provisionLabel is what Provision accepts as a token or key label: it
// becomes a file name (<dir>/<token>.pin).
var provisionLabel = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckProvisionLabel reports whether label can name a provisioned token
// (what the scenario parser and Provision both enforce).
func CheckProvisionLabel(label string) error {
	switch {
	case len(label) > MaxTokenLabel:
		return fmt.Errorf("token label %q is %d bytes long; PKCS#11 allows at most %d", label, len(label), MaxTokenLabel)
	case !provisionLabel.MatchString(label):
		return fmt.Errorf("token label %q: use letters, digits, '.', '_' and '-', starting with a letter or digit (it also names the PIN file)", label)
	}
	return nil
}

// softHSMPaths are where distributions install the SoftHSM2 module.
var softHSMPaths = []string{
	"/usr/lib/softhsm/libsofthsm2.so",
	"/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
	"/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
	"/usr/lib64/pkcs11/libsofthsm2.so",
	"/usr/local/lib/softhsm/libsofthsm2.so",
	"/opt/homebrew/lib/softhsm/libsofthsm2.so",
}

// FindSoftHSM returns the path of the SoftHSM2 PKCS#11 module on this host.
func FindSoftHSM() (string, error) {
	for _, p := range softHSMPaths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("SoftHSM2 not found (looked in %s); install it with apt-get install softhsm2", strings.Join(softHSMPaths, ", "))
}

// pin is where a token's user PIN comes from.
var pin = secret.Source{What: "PIN", EnvKey: "pin_env", FileKey: "pin_file"}

// ReadPIN reads a token's user PIN from the environment variable env or
// from file (exactly one); see secret.Source.Read.
func ReadPIN(env, file string) ([]byte, error) { return pin.Read(env, file) }

// ParseECPoint turns a token's CKA_EC_POINT of an Ed25519 public key into
// the key. PKCS#11 says it is a DER OCTET STRING (04 20 + 32 bytes); some
// modules return the 32 raw bytes, which are accepted too.
func ParseECPoint(v []byte) (crypto.PubKey, error) {
	switch {
	case len(v) == 2+ed25519.PubKeySize && v[0] == 0x04 && v[1] == ed25519.PubKeySize:
		return ed25519.PubKey(bytes.Clone(v[2:])), nil
	case len(v) == ed25519.PubKeySize:
		return ed25519.PubKey(bytes.Clone(v)), nil
	default:
		return nil, fmt.Errorf("CKA_EC_POINT is %d bytes (%x); an Ed25519 point is a DER OCTET STRING 04 20 followed by 32 bytes", len(v), v)
	}
}

// Ed25519 OIDs for CKA_EC_PARAMS: the DER OID 1.3.101.112 (RFC 8410), or
// the PrintableString "edwards25519" that PKCS#11 3.0 also allows.
var (
	ecParamsOID    = []byte{0x06, 0x03, 0x2b, 0x65, 0x70}
	ecParamsString = append([]byte{0x13, 0x0c}, "edwards25519"...)
)

// SlotInfo is one slot of a module, as List sees it.
type SlotInfo struct {
	ID          uint
	Description string
	HasToken    bool
	Token       TokenInfo // when HasToken
}

// TokenInfo is a token and, where it could look, its objects.
type TokenInfo struct {
	Label, Manufacturer, Model, Serial string
	Initialized                        bool
	EdDSA                              bool // offers CKM_EDDSA
	LoggedIn                           bool // private objects are listed too
	Objects                            []Object
	Note                               string // why objects may be missing
}

// Object is one object of a token.
type Object struct {
	Class   string // "private key", "public key", "secret key", "certificate", "data", ...
	Label   string
	KeyType string        // keys only: "EdDSA", "EC", "RSA", "AES", ...
	PubKey  crypto.PubKey // Ed25519 public keys only
}
