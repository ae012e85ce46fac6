//go:build cgo

package pkcs11

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	"github.com/cometbft/cometbft/crypto"
	p11 "github.com/miekg/pkcs11"
)

// Signer signs with one Ed25519 key of one token. It keeps one session
// open for its whole life: the token stays logged in (closing a token's
// last session logs it out) and no signature pays for a session or a
// login. A session must not be used by two threads at once (SoftHSM
// fails with CKR_OPERATION_ACTIVE or crashes), so signatures take turns
// under mu; a validator signs one message at a time anyway.
type Signer struct {
	mu     sync.Mutex
	mod    *module
	cfg    Config // cfg.PIN is the Signer's own copy, zeroed by Close
	pub    crypto.PubKey
	claim  string // inUse key
	sess   p11.SessionHandle
	key    p11.ObjectHandle
	open   bool // sess and key are valid as far as we know
	closed bool
	// reopens counts sessions re-opened after the token lost ours.
	reopens int
}

// inUse holds the keys that an open Signer of this process signs with:
// two validators on one key would sign for both, so the second is refused.
var inUse = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

var errNoSession = errors.New("no open session")

// signMechanisms are what Open requires of the token (a variable so a
// test can ask for one that SoftHSM lacks).
var signMechanisms = []uint{ckmEdDSA}

// Open finds cfg's token and key, logs in, reads the public key, and signs
// and verifies one test message, so a wrong key, a key of another type or
// a token without Ed25519 fails here, not at the first vote.
func Open(cfg Config) (*Signer, error) {
	switch {
	case cfg.KeyLabel == "":
		return nil, errors.New("pkcs11: no key label given")
	case cfg.Token == "" && !cfg.HasSlot:
		return nil, errors.New("pkcs11: no token given: name it by label, or by slot")
	case len(cfg.PIN) == 0:
		return nil, fmt.Errorf("pkcs11: %s: no PIN given", cfg.what())
	}
	m, err := acquire(cfg.Module, cfg.SoftHSMConf)
	if err != nil {
		return nil, err
	}
	s := &Signer{mod: m, cfg: cfg}
	s.cfg.PIN = bytes.Clone(cfg.PIN)
	ts, err := s.connect()
	if err == nil {
		err = s.claimKey(ts)
	}
	if err == nil {
		err = s.selfTest()
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// PubKey is the token's public key, read at Open.
func (s *Signer) PubKey() crypto.PubKey { return s.pub }

// Sign has the token sign msg with CKM_EDDSA (pure Ed25519). If the token
// lost the session - logged out, all sessions closed, the device
// re-plugged or the connector restarted - it opens a new session, logs in,
// finds the key again and retries once.
func (s *Signer) Sign(_ string, msg []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("pkcs11: %s: signer is closed", s.cfg.what())
	}
	sig, err := s.signOnce(msg)
	if err == nil || !sessionLost(err) {
		return sig, s.wrap(err)
	}
	s.drop()
	if _, rerr := s.connect(); rerr != nil {
		return nil, fmt.Errorf("pkcs11: %s: session lost (%v) and could not be re-opened: %w", s.cfg.what(), err, rerr)
	}
	s.reopens++
	sig, err = s.signOnce(msg)
	return sig, s.wrap(err)
}

// Close closes the session and releases the module. It waits for a
// signature in progress. It does not call C_Logout: the login belongs to
// the whole token, and another Signer of this process may still use it.
func (s *Signer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.drop()
	clear(s.cfg.PIN)
	if s.claim != "" {
		inUse.Lock()
		delete(inUse.m, s.claim)
		inUse.Unlock()
	}
	s.mod.release()
	return nil
}

func (s *Signer) wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("pkcs11: %s: sign: %w", s.cfg.what(), err)
}

func (s *Signer) signOnce(msg []byte) ([]byte, error) {
	if !s.open {
		return nil, errNoSession
	}
	if err := s.mod.ctx.SignInit(s.sess, []*p11.Mechanism{p11.NewMechanism(ckmEdDSA, nil)}, s.key); err != nil {
		return nil, err
	}
	sig, err := s.mod.ctx.Sign(s.sess, msg)
	if err != nil {
		return nil, err
	}
	if len(sig) != 64 {
		return nil, fmt.Errorf("the token returned a %d-byte signature; Ed25519 signatures are 64 bytes", len(sig))
	}
	return sig, nil
}

// sessionLost reports errors after which a new session (and login) may
// succeed where the old one failed.
func sessionLost(err error) bool {
	if errors.Is(err, errNoSession) {
		return true
	}
	switch code(err) {
	case p11.CKR_USER_NOT_LOGGED_IN, p11.CKR_SESSION_HANDLE_INVALID, p11.CKR_SESSION_CLOSED,
		p11.CKR_OBJECT_HANDLE_INVALID, p11.CKR_KEY_HANDLE_INVALID, p11.CKR_OPERATION_ACTIVE,
		p11.CKR_DEVICE_REMOVED, p11.CKR_DEVICE_ERROR, p11.CKR_TOKEN_NOT_PRESENT:
		return true
	}
	return false
}

// drop forgets the session, closing it if the token still knows it.
func (s *Signer) drop() {
	if s.open {
		_ = s.mod.ctx.CloseSession(s.sess)
	}
	s.open = false
}

// connect finds the token (again: slot numbers may change when a device
// comes back), opens a session, logs in and finds the key pair. On a
// reconnect the public key must be the one read at Open.
func (s *Signer) connect() (tokenSlot, error) {
	m, cfg := s.mod, s.cfg
	ts, err := m.findSlot(cfg)
	if err != nil {
		return ts, err
	}
	name := fmt.Sprintf("%q", ts.info.Label)
	if missing, ok, err := m.missingMechanism(ts.id, signMechanisms...); err != nil {
		return ts, err
	} else if ok {
		return ts, fmt.Errorf("pkcs11: token %s (slot %d of %s) does not support mechanism 0x%x (%s), which valnet signs with", name, ts.id, m.path, missing, mechanismName(missing))
	}
	sess, err := m.ctx.OpenSession(ts.id, p11.CKF_SERIAL_SESSION)
	if err != nil {
		return ts, fmt.Errorf("pkcs11: token %s: C_OpenSession: %w", name, err)
	}
	fail := func(err error) (tokenSlot, error) {
		_ = m.ctx.CloseSession(sess)
		return ts, err
	}
	if err := m.login(sess, p11.CKU_USER, cfg.PIN, name); err != nil {
		return fail(err)
	}
	priv, n, err := m.keyObject(sess, p11.CKO_PRIVATE_KEY, cfg.KeyLabel)
	switch {
	case err != nil:
		return fail(fmt.Errorf("pkcs11: token %s: find key %q: %w", name, cfg.KeyLabel, err))
	case n == 0:
		return fail(fmt.Errorf("pkcs11: no private key labelled %q on token %s (%s)", cfg.KeyLabel, name, m.keyLabels(sess)))
	case n > 1:
		return fail(fmt.Errorf("pkcs11: %d private keys labelled %q on token %s: the label must name one key", n, cfg.KeyLabel, name))
	}
	attrs, err := m.ctx.GetAttributeValue(sess, priv, []*p11.Attribute{p11.NewAttribute(p11.CKA_KEY_TYPE, nil)})
	if err != nil {
		return fail(fmt.Errorf("pkcs11: token %s: key %q: read CKA_KEY_TYPE: %w", name, cfg.KeyLabel, err))
	}
	if kt := ulong(attrs[0].Value); kt != ckkECEdwards {
		return fail(fmt.Errorf("pkcs11: key %q on token %s has key type %s; valnet signs with Ed25519 keys (CKK_EC_EDWARDS)", cfg.KeyLabel, name, keyTypeName(kt)))
	}
	pubObj, n, err := m.keyObject(sess, p11.CKO_PUBLIC_KEY, cfg.KeyLabel)
	switch {
	case err != nil:
		return fail(fmt.Errorf("pkcs11: token %s: find public key %q: %w", name, cfg.KeyLabel, err))
	case n != 1:
		return fail(fmt.Errorf("pkcs11: token %s has %d public key objects labelled %q; valnet reads the public key (CKA_EC_POINT) from exactly one", name, n, cfg.KeyLabel))
	}
	pub, err := m.ecPoint(sess, pubObj)
	if err != nil {
		return fail(fmt.Errorf("pkcs11: public key %q on token %s: %w", cfg.KeyLabel, name, err))
	}
	if s.pub != nil && !bytes.Equal(s.pub.Bytes(), pub.Bytes()) {
		return fail(fmt.Errorf("pkcs11: the key labelled %q on token %s is not the key it was (public key %X, was %X); refusing to sign with another key", cfg.KeyLabel, name, pub.Bytes(), s.pub.Bytes()))
	}
	s.pub, s.sess, s.key, s.open = pub, sess, priv, true
	return ts, nil
}

// claimKey refuses a key that another open Signer of this process uses.
func (s *Signer) claimKey(ts tokenSlot) error {
	claim := s.mod.key + "\x00" + ts.info.Label + "\x00" + ts.info.SerialNumber + "\x00" + s.cfg.KeyLabel
	inUse.Lock()
	defer inUse.Unlock()
	if inUse.m[claim] {
		return fmt.Errorf("pkcs11: %s is already used by another signer of this run: two validators may not share a key", s.cfg.what())
	}
	inUse.m[claim], s.claim = true, claim
	return nil
}

// selfTest signs a random message and verifies it with the public key.
func (s *Signer) selfTest() error {
	msg := make([]byte, 48)
	copy(msg, "valnet pkcs11 self-test ")
	if _, err := rand.Read(msg[24:]); err != nil {
		return err
	}
	s.mu.Lock()
	sig, err := s.signOnce(msg)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("pkcs11: %s: self-test signature failed: %w", s.cfg.what(), err)
	}
	if !s.pub.VerifySignature(msg, sig) {
		return fmt.Errorf("pkcs11: %s: the self-test signature does not verify with the public key of the same label: the two objects are not one key pair, or the token does not make pure Ed25519 signatures with CKM_EDDSA", s.cfg.what())
	}
	return nil
}

// ecPoint reads an Ed25519 public key object's key.
func (m *module) ecPoint(sess p11.SessionHandle, obj p11.ObjectHandle) (crypto.PubKey, error) {
	attrs, err := m.ctx.GetAttributeValue(sess, obj, []*p11.Attribute{p11.NewAttribute(p11.CKA_EC_POINT, nil)})
	if err != nil {
		return nil, fmt.Errorf("read CKA_EC_POINT: %w", err)
	}
	return ParseECPoint(attrs[0].Value)
}

// keyLabels describes the private keys of a token, for "key not found".
func (m *module) keyLabels(sess p11.SessionHandle) string {
	hs, err := m.findObjects(sess, []*p11.Attribute{p11.NewAttribute(p11.CKA_CLASS, p11.CKO_PRIVATE_KEY)})
	if err != nil {
		return "could not list its keys: " + err.Error()
	}
	if len(hs) == 0 {
		return "it holds no private keys"
	}
	var labels []string
	for _, h := range hs {
		a, err := m.ctx.GetAttributeValue(sess, h, []*p11.Attribute{p11.NewAttribute(p11.CKA_LABEL, nil)})
		if err == nil {
			labels = append(labels, fmt.Sprintf("%q", a[0].Value))
		}
	}
	return fmt.Sprintf("private keys there: %s", joinMax(labels, 10))
}

func joinMax(list []string, max int) string {
	out := ""
	for i, s := range list {
		if i == max {
			return out + fmt.Sprintf(" and %d more", len(list)-max)
		}
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}
