//go:build cgo

package pkcs11

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/cometbft/cometbft/crypto"
	p11 "github.com/miekg/pkcs11"
)

// provisionMu serialises token creation: SoftHSM offers one free slot at
// a time, and two C_InitToken on it would race.
var provisionMu sync.Mutex

// Provision creates a throwaway SoftHSM2 token labelled tokenLabel, with
// an Ed25519 key pair labelled keyLabel (default "consensus"), under dir:
//
//	dir/softhsm2.conf   directories.tokendir = dir/tokens, file backend
//	dir/tokens/         the tokens
//	dir/<token>.pin     the user PIN, random, mode 0600
//
// It sets SOFTHSM2_CONF for this process. SoftHSM reads that file once,
// at C_Initialize, and a module is initialised once per process, so every
// token of one process lives under one dir: call Provision once per
// token, with the same dir (a run provisions all its validators' tokens
// in <run>/hsm). The security officer PIN is random and not kept.
// The token is created through the PKCS#11 API; only the module is needed.
func Provision(dir, tokenLabel, keyLabel string) (Config, error) {
	return ProvisionModule("", dir, tokenLabel, keyLabel)
}

// ProvisionModule is Provision with a given SoftHSM2 module; "" finds it
// (FindSoftHSM). It refuses a module that is not SoftHSM, whose free
// slots could be real, erasable tokens.
func ProvisionModule(module, dir, tokenLabel, keyLabel string) (Config, error) {
	if keyLabel == "" {
		keyLabel = DefaultKeyLabel
	}
	if err := CheckProvisionLabel(tokenLabel); err != nil {
		return Config{}, fmt.Errorf("pkcs11 provision: %w", err)
	}
	if module == "" {
		var err error
		if module, err = FindSoftHSM(); err != nil {
			return Config{}, fmt.Errorf("pkcs11 provision: %w", err)
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Config{}, err
	}
	conf, err := writeSoftHSMConf(dir)
	if err != nil {
		return Config{}, fmt.Errorf("pkcs11 provision: %w", err)
	}
	provisionMu.Lock()
	defer provisionMu.Unlock()
	m, err := acquire(module, conf)
	if err != nil {
		return Config{}, err
	}
	defer m.release()
	if !m.isSoftHSM() {
		return Config{}, fmt.Errorf("pkcs11 provision: %s is %q, not SoftHSM: valnet only creates throwaway tokens in SoftHSM", module, m.info.ManufacturerID)
	}
	ts, err := m.tokens()
	if err != nil {
		return Config{}, err
	}
	free := -1
	for i, t := range ts {
		if t.ready && t.info.Label == tokenLabel {
			return Config{}, fmt.Errorf("pkcs11 provision: token %q already exists in %s: each validator needs its own token", tokenLabel, dir)
		}
		if !t.ready && free < 0 {
			free = i
		}
	}
	if free < 0 {
		return Config{}, fmt.Errorf("pkcs11 provision: %s offers no free slot for a new token", module)
	}
	pinFile := filepath.Join(dir, tokenLabel+".pin")
	soPIN, pin := randomPIN(), randomPIN()
	// The PIN file first, exclusively: it is what makes the token usable.
	if err := writeNew(pinFile, []byte(pin+"\n")); err != nil {
		return Config{}, fmt.Errorf("pkcs11 provision: %w", err)
	}
	if err := m.ctx.InitToken(ts[free].id, soPIN, tokenLabel); err != nil {
		return Config{}, fmt.Errorf("pkcs11 provision: C_InitToken %q: %w", tokenLabel, err)
	}
	cfg := Config{Module: module, Token: tokenLabel, KeyLabel: keyLabel, PIN: []byte(pin), SoftHSMConf: conf}
	// SoftHSM gives an initialised token a new slot number: find it by label.
	slot, err := m.findSlot(cfg)
	if err != nil {
		return Config{}, err
	}
	sess, err := m.ctx.OpenSession(slot.id, p11.CKF_SERIAL_SESSION|p11.CKF_RW_SESSION)
	if err != nil {
		return Config{}, fmt.Errorf("pkcs11 provision: token %q: C_OpenSession: %w", tokenLabel, err)
	}
	defer m.ctx.CloseSession(sess)
	name := fmt.Sprintf("%q", tokenLabel)
	if err := m.login(sess, p11.CKU_SO, []byte(soPIN), name); err != nil {
		return Config{}, err
	}
	if err := m.ctx.InitPIN(sess, pin); err != nil {
		return Config{}, fmt.Errorf("pkcs11 provision: token %q: C_InitPIN: %w", tokenLabel, err)
	}
	if err := m.ctx.Logout(sess); err != nil {
		return Config{}, fmt.Errorf("pkcs11 provision: token %q: C_Logout: %w", tokenLabel, err)
	}
	if err := m.login(sess, p11.CKU_USER, []byte(pin), name); err != nil {
		return Config{}, err
	}
	if _, err := m.generateKeyPair(sess, keyLabel); err != nil {
		return Config{}, fmt.Errorf("pkcs11 provision: token %q: %w", tokenLabel, err)
	}
	return cfg, nil
}

// Keygen generates an Ed25519 key pair labelled cfg.KeyLabel on cfg's
// token (a real one: Keygen creates no token) and returns its public key.
// It refuses a label that any object of the token already has.
func Keygen(cfg Config) (crypto.PubKey, error) {
	if cfg.KeyLabel == "" {
		return nil, errors.New("pkcs11 keygen: no key label given")
	}
	m, err := acquire(cfg.Module, cfg.SoftHSMConf)
	if err != nil {
		return nil, err
	}
	defer m.release()
	ts, err := m.findSlot(cfg)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%q", ts.info.Label)
	if missing, ok, err := m.missingMechanism(ts.id, ckmECEdwardsKeyPairGen, ckmEdDSA); err != nil {
		return nil, err
	} else if ok {
		return nil, fmt.Errorf("pkcs11 keygen: token %s does not support mechanism 0x%x (%s)", name, missing, mechanismName(missing))
	}
	sess, err := m.ctx.OpenSession(ts.id, p11.CKF_SERIAL_SESSION|p11.CKF_RW_SESSION)
	if err != nil {
		return nil, fmt.Errorf("pkcs11 keygen: token %s: C_OpenSession: %w", name, err)
	}
	defer m.ctx.CloseSession(sess)
	if err := m.login(sess, p11.CKU_USER, cfg.PIN, name); err != nil {
		return nil, err
	}
	hs, err := m.findObjects(sess, []*p11.Attribute{p11.NewAttribute(p11.CKA_LABEL, cfg.KeyLabel)})
	if err != nil {
		return nil, fmt.Errorf("pkcs11 keygen: token %s: %w", name, err)
	}
	if len(hs) > 0 {
		return nil, fmt.Errorf("pkcs11 keygen: token %s already has %d object(s) labelled %q; choose another label (valnet never replaces keys)", name, len(hs), cfg.KeyLabel)
	}
	pub, err := m.generateKeyPair(sess, cfg.KeyLabel)
	if err != nil {
		return nil, fmt.Errorf("pkcs11 keygen: token %s: %w", name, err)
	}
	return pub, nil
}

// generateKeyPair makes a token-resident Ed25519 key pair whose private
// half is sensitive and not extractable.
func (m *module) generateKeyPair(sess p11.SessionHandle, label string) (crypto.PubKey, error) {
	mech := []*p11.Mechanism{p11.NewMechanism(ckmECEdwardsKeyPairGen, nil)}
	priv := []*p11.Attribute{
		p11.NewAttribute(p11.CKA_CLASS, p11.CKO_PRIVATE_KEY),
		p11.NewAttribute(p11.CKA_KEY_TYPE, ckkECEdwards),
		p11.NewAttribute(p11.CKA_TOKEN, true),
		p11.NewAttribute(p11.CKA_PRIVATE, true),
		p11.NewAttribute(p11.CKA_SENSITIVE, true),
		p11.NewAttribute(p11.CKA_EXTRACTABLE, false),
		p11.NewAttribute(p11.CKA_SIGN, true),
		p11.NewAttribute(p11.CKA_LABEL, label),
	}
	var pubObj p11.ObjectHandle
	var err error
	// Modules differ in the curve name they accept: the OID first, then
	// the PrintableString form.
	for _, params := range [][]byte{ecParamsOID, ecParamsString} {
		pub := []*p11.Attribute{
			p11.NewAttribute(p11.CKA_CLASS, p11.CKO_PUBLIC_KEY),
			p11.NewAttribute(p11.CKA_KEY_TYPE, ckkECEdwards),
			p11.NewAttribute(p11.CKA_TOKEN, true),
			p11.NewAttribute(p11.CKA_VERIFY, true),
			p11.NewAttribute(p11.CKA_LABEL, label),
			p11.NewAttribute(p11.CKA_EC_PARAMS, params),
		}
		pubObj, _, err = m.ctx.GenerateKeyPair(sess, mech, pub, priv)
		if c := code(err); c != p11.CKR_ATTRIBUTE_VALUE_INVALID && c != p11.CKR_CURVE_NOT_SUPPORTED && c != p11.CKR_DOMAIN_PARAMS_INVALID {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("generate Ed25519 key pair %q: %w", label, err)
	}
	return m.ecPoint(sess, pubObj)
}

// writeSoftHSMConf writes dir/softhsm2.conf (kept if it already says the
// same) and creates the token directory.
func writeSoftHSMConf(dir string) (string, error) {
	tokens := filepath.Join(dir, "tokens")
	if err := os.MkdirAll(tokens, 0o700); err != nil {
		return "", err
	}
	conf := filepath.Join(dir, "softhsm2.conf")
	text := fmt.Sprintf("# Written by valnet: a throwaway SoftHSM2 store for this run's tokens.\n"+
		"directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n", tokens)
	if old, err := os.ReadFile(conf); err == nil && string(old) == text {
		return conf, nil
	}
	tmp := conf + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		return "", err
	}
	return conf, os.Rename(tmp, conf)
}

// writeNew creates path with data, mode 0600, refusing an existing file.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// randomPIN is 128 random bits (crypto/rand.Text); SoftHSM takes PINs of
// 4 to 255 bytes.
func randomPIN() string { return rand.Text() }
