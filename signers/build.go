package signers

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/signers/ledger"
	"github.com/valnet/valnet/signers/pkcs11"
	"github.com/valnet/valnet/signers/profiles"
	"github.com/valnet/valnet/signers/threshold"
)

// Backend types.
const (
	TypeLocal     = "local"
	TypeKeyfile   = "keyfile"
	TypeSimulated = "simulated"
	TypePKCS11    = "pkcs11"
	TypeLedger    = "ledger"
	// TypeExternal is a signer valnet does not run (a KMS that dialled
	// in): Spec.External is the node's connection to it, behind a Watched
	// instead of a Guarded.
	TypeExternal = "external"
	// TypeThreshold is a MODEL of a horcrux-style threshold signer:
	// Spec.Threshold's cosigners run their rounds for each signature,
	// which is then made with Key (the model's one full key).
	TypeThreshold = "threshold"
)

// LedgerSpec is a Ledger running the validator app: a real device over
// USB HID, or the built-in device model (emulator).
type LedgerSpec struct {
	Connection   string // hid | emulator
	Serial       string // hid: "" = the first device
	ChunkSize    int    // APDU payload bytes per packet
	ConfirmDelay time.Duration
	Timing       ledger.EmulatorTiming
}

// Spec says which signer chain to build for one validator.
type Spec struct {
	Type string // local | keyfile | simulated | pkcs11
	// Key is the validator's key (derived from the run seed). local and
	// simulated sign with it; keyfile encrypts it into a new key file, or
	// signs with the key already in an existing file.
	Key       crypto.PrivKey
	KeyFile   string // local: CometBFT's priv_validator_key.json (written if absent)
	StateFile string // the double-sign guard's high-water mark
	Keyfile   *KeyfileSpec
	Profile   *profiles.Profile // simulated
	PKCS11    *pkcs11.Config    // pkcs11: the token and key; Key is not used
	Ledger    *LedgerSpec       // ledger; the emulator holds Key (ed25519 only)
	CPUScale  float64           // 0 or 1: no scaling
	Latency   *latency.Spec     // nil: no injected delay
	Phases    []string          // phases the delay applies to; empty: all
	Seed      int64             // run seed, for latency and device draws
	Stream    string            // usually the validator name, to separate draws
	Obs       Observer          // receives every signature; nil: none
	// Device is the shared signing device this signer queues on (nil:
	// none); the backend signs on it, under the guard.
	Device *Device
	// External is the node's connection to an external signer (type
	// external), connected; Label names it.
	External      Signer
	ExternalLabel string
	// Threshold is the cosigners of a threshold signer (type threshold).
	Threshold *threshold.Cluster
	// Clock is what the chain's modelled times are spent and measured on:
	// the latency model, fault delays, a simulated device, cpu_scale's
	// added wait, the Ledger model, and Instrumented's timing. nil: the
	// real clock. A Device has its own (NewDeviceWithClock): give it the
	// same one.
	Clock clockwork.Clock
}

// KeyfileSpec is an encrypted key file.
type KeyfileSpec struct {
	Path       string
	Mode       string // every-sign | once
	Cost       int    // bcrypt cost when the file is created
	Passphrase []byte
}

// Built is a ready signer chain:
//
//	Instrumented → Delayed → Faults → (restartable) Guarded → [Device queue →] backend
//
// The guard is innermost-but-one so that every path, whatever the backend,
// keeps the persisted high-water mark; faults and delays sit outside it so
// that a fault never changes what was persisted.
type Built struct {
	Signer Signer // the outermost decorator: hand this to the node or the remote server
	Faults *Faults
	Label  string // e.g. "keyfile(every-sign)+latency(fixed 200ms)"
	PubKey crypto.PubKey

	spec Spec
	slot *swappable
	// emu is the Ledger device model, created once: a signer restart
	// reconnects to the same device, whose RAM vote state survives (only
	// reopening the app on the device would reset it).
	emu *ledger.Emulator
}

// Build opens the backend of spec and wraps it.
func Build(spec Spec) (*Built, error) {
	b := &Built{spec: spec}
	guard, label, err := b.open()
	if err != nil {
		return nil, err
	}
	b.PubKey, err = guard.GetPubKey()
	if err != nil {
		_ = Close(guard)
		return nil, err
	}
	clock := clockOr(spec.Clock)
	b.slot = &swappable{inner: guard, pub: b.PubKey}
	b.Faults = WithFaults(b.slot)
	b.Faults.clock = clock
	var s Signer = b.Faults
	if spec.Latency != nil {
		model, err := latency.New(*spec.Latency, spec.Seed, spec.Stream)
		if err != nil {
			_ = Close(guard)
			return nil, err
		}
		d := WithLatency(s, model, spec.Phases)
		d.clock = clock
		s = d
		label += "+latency(" + model.String() + ")"
	}
	if spec.Obs != nil {
		inst := Instrument(s, spec.Obs)
		inst.clock, inst.onDevice = clock, spec.Device != nil
		s = inst
	}
	b.Signer, b.Label = s, label
	return b, nil
}

// open opens the backend, scaled for the host's CPU, behind a new guard
// (an external signer behind the node-side watch).
func (b *Built) open() (Signer, string, error) {
	if b.spec.Type == TypeExternal {
		return b.openExternal()
	}
	var (
		ks    KeySigner
		label string
		err   error
	)
	if b.spec.Type == TypeLedger {
		ks, label, err = b.openLedger()
	} else {
		ks, label, err = openBackend(b.spec)
	}
	if err != nil {
		return nil, "", err
	}
	if s := b.spec.CPUScale; s != 0 && s != 1 {
		scaled, err := newCPUScaled(ks, s, b.spec.Clock)
		if err != nil {
			closeKeySigner(ks)
			return nil, "", err
		}
		ks = scaled
		label += fmt.Sprintf("+cpu_scale(%g)", s)
	}
	if dev := b.spec.Device; dev != nil {
		ks = dev.Join(ks)
		label += "+device(" + dev.Name() + ")"
	}
	g, err := OpenGuard(ks, b.spec.StateFile)
	if err != nil {
		closeKeySigner(ks)
		return nil, "", err
	}
	return g, label, nil
}

// openExternal puts the connection to an external signer behind the
// node-side watch, with the key the signer holds.
func (b *Built) openExternal() (Signer, string, error) {
	ext := b.spec.External
	if ext == nil {
		return nil, "", errors.New("external signer without a connection")
	}
	pub, err := ext.GetPubKey()
	if err != nil {
		return nil, "", fmt.Errorf("external signer's public key (GetPubKey): %w", err)
	}
	w, err := Watch(ext, pub, b.spec.StateFile)
	if err != nil {
		return nil, "", err
	}
	return w, b.spec.ExternalLabel, nil
}

func closeKeySigner(ks KeySigner) {
	if c, ok := ks.(Closer); ok {
		_ = c.Close()
	}
}

func openBackend(spec Spec) (KeySigner, string, error) {
	switch spec.Type {
	case TypeLocal, "":
		if err := ensureKeyFile(spec.Key, spec.KeyFile); err != nil {
			return nil, "", err
		}
		return PrivKeySigner{Key: spec.Key}, "local", nil
	case TypeKeyfile:
		kf := spec.Keyfile
		if kf == nil {
			return nil, "", errors.New("keyfile signer without a key file spec")
		}
		if _, err := os.Stat(kf.Path); errors.Is(err, os.ErrNotExist) {
			if err := WriteKeyFile(kf.Path, spec.Key, kf.Passphrase, kf.Cost); err != nil {
				return nil, "", err
			}
		}
		k, err := OpenKeyFile(kf.Path, kf.Passphrase, kf.Mode)
		if err != nil {
			return nil, "", err
		}
		return k, "keyfile(" + kf.Mode + ")", nil
	case TypeSimulated:
		if spec.Profile == nil {
			return nil, "", errors.New("simulated signer without a profile")
		}
		s, err := NewSimulated(PrivKeySigner{Key: spec.Key}, *spec.Profile, spec.Seed, spec.Stream)
		if err != nil {
			return nil, "", err
		}
		s.clock = clockOr(spec.Clock)
		return s, s.Label(), nil
	case TypeThreshold:
		if spec.Threshold == nil {
			return nil, "", errors.New("threshold signer without its cosigners")
		}
		if err := ensureKeyFile(spec.Key, spec.KeyFile); err != nil {
			return nil, "", err
		}
		return spec.Threshold.Signer(PrivKeySigner{Key: spec.Key}), spec.Threshold.Label(), nil
	case TypePKCS11:
		if spec.PKCS11 == nil {
			return nil, "", errors.New("pkcs11 signer without a token spec")
		}
		s, err := pkcs11.Open(*spec.PKCS11)
		if err != nil {
			return nil, "", err
		}
		return s, "pkcs11(" + spec.PKCS11.Name() + ")", nil
	default:
		return nil, "", fmt.Errorf("signer type %q is not available (allowed: local, keyfile, simulated, pkcs11, threshold)", spec.Type)
	}
}

// openLedger opens the Ledger app on a real device or on the device model.
func (b *Built) openLedger() (KeySigner, string, error) {
	ls := b.spec.Ledger
	if ls == nil {
		return nil, "", errors.New("ledger signer without a device spec")
	}
	var dev ledger.Device
	switch ls.Connection {
	case "hid":
		d, err := ledger.OpenHID(ls.Serial)
		if err != nil {
			return nil, "", err
		}
		dev = d
	case "emulator", "":
		if b.emu == nil {
			key, ok := b.spec.Key.(ed25519.PrivKey)
			if !ok {
				return nil, "", fmt.Errorf("the Ledger validator app signs Ed25519 only; key_type %s is not possible", b.spec.Key.Type())
			}
			t := ls.Timing
			b.emu = ledger.NewEmulator(ledger.EmulatorConfig{Key: key, Timing: &t, ConfirmDelay: ls.ConfirmDelay, Clock: b.spec.Clock})
		}
		dev = b.emu.Conn()
	default:
		return nil, "", fmt.Errorf("ledger connection %q (allowed: hid, emulator)", ls.Connection)
	}
	s, err := ledger.Open(dev, ls.ChunkSize)
	if err != nil {
		return nil, "", err
	}
	return s, s.Label(), nil
}

// Restart stops the signer and starts it again from its persisted state, as
// a killed and restarted signer process would: the guard is closed (its
// lock released) and a new guard reads the high-water mark back from the
// state file. Signatures asked for in between fail.
func (b *Built) Restart(down func()) error {
	if b.spec.Type == TypeExternal {
		return errors.New("valnet does not run an external signer, so it cannot restart it")
	}
	if prev := b.slot.swap(nil); prev != nil {
		if err := Close(prev); err != nil {
			return err
		}
	}
	if down != nil {
		down()
	}
	g, _, err := b.open()
	if err != nil {
		return fmt.Errorf("signer restart: %w", err)
	}
	b.slot.swap(g)
	return nil
}

// Close closes the whole chain (and the device model, if any).
func (b *Built) Close() error {
	if b.emu != nil {
		_ = b.emu.Close() // ends a modelled wait at once
	}
	return Close(b.Signer)
}
