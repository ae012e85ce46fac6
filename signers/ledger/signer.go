// Package ledger signs with the Tendermint validator app on a Ledger
// device (CLA 0x56), over USB HID through zondax/ledger-go, or against a
// MODEL of the device (Emulator) that reproduces the app's protocol, vote
// state machine and published timing. See docs/ledger.md.
//
// Signer has the shape of valnet's signers.KeySigner (PubKey, Sign) plus
// Close, TakeInjected and Label; this package does not import valnet's
// signers package so that package can import this one.
package ledger

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
)

// Device is one APDU transport. It has the method set of ledger-go's
// ledger_go.LedgerDevice, and the same contract: Exchange takes a whole
// command APDU and returns the answer without its status word; a status
// word other than 0x9000 comes back as an error (ParseResponse recovers it
// from both ledger-go's error text and this package's *StatusError).
type Device interface {
	Exchange(command []byte) ([]byte, error)
	Close() error
}

// Signer signs CometBFT sign bytes on a device running the Tendermint
// validator app. Signs are serialised: a multi-packet signature must not
// interleave with another on the device's single buffer.
type Signer struct {
	dev       Device
	chunkSize int
	version   Version
	pub       ed25519.PubKey

	mu     sync.Mutex
	closed bool

	closeOnce sync.Once
	closeErr  error
}

// Signer has the method set valnet's signers package expects of a
// backend (KeySigner, Closer, InjectedReporter), checked here without
// importing it.
var _ interface {
	PubKey() crypto.PubKey
	Sign(kind string, msg []byte) ([]byte, error)
	Close() error
	TakeInjected() time.Duration
	Label() string
} = (*Signer)(nil)

// Open asks dev for the app version and public key. chunkSize is the APDU
// data size per packet (0 means DefaultChunkSize). Open takes ownership of
// dev: Close closes it, and so does Open if it fails.
func Open(dev Device, chunkSize int) (s *Signer, err error) {
	if dev == nil {
		return nil, errors.New("ledger: no device")
	}
	defer func() {
		if err != nil {
			_ = dev.Close()
		}
	}()
	if chunkSize == 0 {
		chunkSize = DefaultChunkSize
	}
	if chunkSize < 1 || chunkSize > MaxChunkSize {
		return nil, fmt.Errorf("ledger: chunk size %d outside 1..%d", chunkSize, MaxChunkSize)
	}
	data, err := ParseResponse(dev.Exchange(VersionAPDU()))
	if err != nil {
		return nil, fmt.Errorf("ledger: get version: %w", err)
	}
	v, err := ParseVersion(data)
	if err != nil {
		return nil, err
	}
	if err := CheckVersion(v); err != nil {
		return nil, err
	}
	data, err = ParseResponse(dev.Exchange(PubKeyAPDU()))
	if err != nil {
		return nil, fmt.Errorf("ledger: get public key: %w", err)
	}
	if len(data) != ed25519.PubKeySize {
		return nil, fmt.Errorf("ledger: public key answer has %d bytes, want %d", len(data), ed25519.PubKeySize)
	}
	return &Signer{
		dev:       dev,
		chunkSize: chunkSize,
		version:   v,
		pub:       ed25519.PubKey(append([]byte(nil), data...)),
	}, nil
}

// PubKey is the device's Ed25519 validator key.
func (s *Signer) PubKey() crypto.PubKey { return s.pub }

// Version is the app version the device reported.
func (s *Signer) Version() Version { return s.version }

// ChunkSize is the APDU data size per packet.
func (s *Signer) ChunkSize() int { return s.chunkSize }

// Label names the backend for reports; a model says it is one.
func (s *Signer) Label() string {
	if m, ok := s.dev.(interface{ Model() string }); ok {
		return "ledger(" + m.Model() + ")"
	}
	return "ledger"
}

// TakeInjected returns the device's modelled time since the last call when
// the device is a model (valnet reports it as injected), else 0.
func (s *Signer) TakeInjected() time.Duration {
	if m, ok := s.dev.(interface{ TakeModelled() time.Duration }); ok {
		return m.TakeModelled()
	}
	return 0
}

// Sign sends msg in chunks and returns the device's signature. kind
// (proposal, prevote, precommit, bytes) only labels errors: the device
// reads the phase from the bytes. A signature that does not verify against
// the device's key is an error and is never returned.
func (s *Signer) Sign(kind string, msg []byte) ([]byte, error) {
	packets, err := SignAPDUs(msg, s.chunkSize)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("ledger: signer closed")
	}
	var data []byte
	for i, p := range packets {
		data, err = ParseResponse(s.dev.Exchange(p))
		if err != nil {
			return nil, fmt.Errorf("ledger: sign %s (packet %d/%d): %w", kind, i+1, len(packets), err)
		}
		if i < len(packets)-1 && len(data) != 0 {
			return nil, fmt.Errorf("ledger: sign %s: device answered %d bytes to packet %d/%d, want none",
				kind, len(data), i+1, len(packets))
		}
	}
	if len(data) != ed25519.SignatureSize {
		return nil, fmt.Errorf("ledger: sign %s: device returned %d bytes, want a %d-byte signature",
			kind, len(data), ed25519.SignatureSize)
	}
	if !s.pub.VerifySignature(msg, data) {
		return nil, fmt.Errorf("ledger: sign %s: device returned a signature that does not verify against its public key", kind)
	}
	return append([]byte(nil), data...), nil
}

// Close closes the device; later calls return the first result.
func (s *Signer) Close() error {
	s.closeOnce.Do(func() {
		// Close the device before taking mu: a model releases a sleep in
		// progress, so a Sign holding mu returns promptly.
		s.closeErr = s.dev.Close()
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
	})
	return s.closeErr
}
