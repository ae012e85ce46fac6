//go:build cgo

package pkcs11

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	p11 "github.com/miekg/pkcs11"
)

// Available says whether this build can talk to PKCS#11 modules.
const Available = true

// Mechanisms and key type that miekg/pkcs11 v1.1.2 does not name
// (PKCS#11 3.0).
const (
	ckkECEdwards           = 0x40
	ckmECEdwardsKeyPairGen = 0x1055
	ckmEdDSA               = 0x1057
)

// module is one loaded PKCS#11 library. C_Initialize is process-global for
// a library, so the process keeps one context per library, shared by
// every user and finalised when the last one releases it.
type module struct {
	path  string // as loaded
	key   string // symlinks resolved: two paths to one library are one module
	conf  string // SOFTHSM2_CONF when it was initialised
	ctx   *p11.Ctx
	refs  int
	owned bool // we called C_Initialize (and so may call C_Finalize)
	info  p11.Info
}

var modules = struct {
	sync.Mutex
	m map[string]*module
}{m: map[string]*module{}}

// acquire loads and initialises the library at path, or shares the
// context already open. conf, when set, is the SoftHSM2 config the module
// must see: it is put into SOFTHSM2_CONF before C_Initialize (SoftHSM
// reads it only then).
func acquire(path, conf string) (*module, error) {
	if path == "" {
		return nil, errors.New("pkcs11: no module given: name the token's PKCS#11 library (e.g. /usr/lib/softhsm/libsofthsm2.so)")
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("pkcs11: module %s not found: give the path of the HSM's PKCS#11 library (for SoftHSM2: apt-get install softhsm2)", path)
	case err != nil:
		return nil, fmt.Errorf("pkcs11: module %s: %w", path, err)
	case st.IsDir():
		return nil, fmt.Errorf("pkcs11: module %s is a directory, not a PKCS#11 library", path)
	}
	key, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("pkcs11: module %s: %w", path, err)
	}
	if key, err = filepath.Abs(key); err != nil {
		return nil, fmt.Errorf("pkcs11: module %s: %w", path, err)
	}
	modules.Lock()
	defer modules.Unlock()
	if m := modules.m[key]; m != nil {
		if conf != "" && m.conf != conf {
			return nil, fmt.Errorf("pkcs11: module %s is already in use in this process with SOFTHSM2_CONF=%q; SoftHSM reads its configuration only at C_Initialize, so the tokens under %s become visible once every signer of the other configuration is closed", path, m.conf, conf)
		}
		m.refs++
		return m, nil
	}
	if conf != "" {
		// With cgo, os.Setenv reaches the C environment that getenv sees.
		if err := os.Setenv("SOFTHSM2_CONF", conf); err != nil {
			return nil, fmt.Errorf("pkcs11: set SOFTHSM2_CONF: %w", err)
		}
	}
	ctx := p11.New(path)
	if ctx == nil {
		return nil, fmt.Errorf("pkcs11: cannot load module %s: it is not a PKCS#11 library, or a library it needs is missing (try ldd %s)", path, path)
	}
	m := &module{path: path, key: key, conf: os.Getenv("SOFTHSM2_CONF"), ctx: ctx, refs: 1, owned: true}
	if err := ctx.Initialize(); err != nil {
		if code(err) != p11.CKR_CRYPTOKI_ALREADY_INITIALIZED {
			ctx.Destroy()
			return nil, fmt.Errorf("pkcs11: module %s: C_Initialize: %w", path, err)
		}
		m.owned = false // someone else in the process initialised it: not ours to finalise
	}
	if m.info, err = ctx.GetInfo(); err != nil {
		m.finalize()
		return nil, fmt.Errorf("pkcs11: module %s: C_GetInfo: %w", path, err)
	}
	modules.m[key] = m
	return m, nil
}

// release drops one user; the last one finalises and unloads the module.
func (m *module) release() {
	modules.Lock()
	defer modules.Unlock()
	if m.refs--; m.refs > 0 {
		return
	}
	delete(modules.m, m.key)
	m.finalize()
}

func (m *module) finalize() {
	if m.owned {
		_ = m.ctx.Finalize()
	}
	m.ctx.Destroy()
}

// isSoftHSM reports whether the module is SoftHSM (its manufacturer ID).
func (m *module) isSoftHSM() bool {
	return strings.Contains(m.info.ManufacturerID, "SoftHSM")
}

// tokenSlot is a slot with a token, as this package looks at it.
type tokenSlot struct {
	id    uint
	info  p11.TokenInfo
	ready bool // CKF_TOKEN_INITIALIZED
}

// tokens lists the slots that hold a token.
func (m *module) tokens() ([]tokenSlot, error) {
	ids, err := m.ctx.GetSlotList(true)
	if err != nil {
		return nil, fmt.Errorf("pkcs11: module %s: C_GetSlotList: %w", m.path, err)
	}
	var out []tokenSlot
	for _, id := range ids {
		ti, err := m.ctx.GetTokenInfo(id)
		if err != nil {
			return nil, fmt.Errorf("pkcs11: module %s: slot %d: C_GetTokenInfo: %w", m.path, id, err)
		}
		out = append(out, tokenSlot{id: id, info: ti, ready: ti.Flags&p11.CKF_TOKEN_INITIALIZED != 0})
	}
	return out, nil
}

// findSlot finds the slot of cfg's token: by label, or the slot number.
// Slot numbers of some modules (SoftHSM among them) change when tokens are
// added, so a label is the sturdier name.
func (m *module) findSlot(cfg Config) (tokenSlot, error) {
	ts, err := m.tokens()
	if err != nil {
		return tokenSlot{}, err
	}
	var labels []string
	for _, t := range ts {
		if !t.ready {
			continue
		}
		if cfg.Token == "" && cfg.HasSlot && t.id == cfg.Slot || cfg.Token != "" && t.info.Label == cfg.Token {
			return t, nil
		}
		labels = append(labels, fmt.Sprintf("%q (slot %d)", t.info.Label, t.id))
	}
	have := "no initialised tokens"
	if len(labels) > 0 {
		have = "tokens: " + strings.Join(labels, ", ")
	}
	if cfg.Token == "" && cfg.HasSlot {
		return tokenSlot{}, fmt.Errorf("pkcs11: no initialised token in slot %d of %s (%s)", cfg.Slot, m.path, have)
	}
	hint := ""
	if m.isSoftHSM() {
		hint = fmt.Sprintf("; SoftHSM looks in the tokendir of SOFTHSM2_CONF=%q", m.conf)
	}
	return tokenSlot{}, fmt.Errorf("pkcs11: token %q not found in %s (%s)%s", cfg.Token, m.path, have, hint)
}

// missingMechanism reports the first of want that slot does not offer.
func (m *module) missingMechanism(slot uint, want ...uint) (uint, bool, error) {
	mechs, err := m.ctx.GetMechanismList(slot)
	if err != nil {
		return 0, false, fmt.Errorf("pkcs11: slot %d: C_GetMechanismList: %w", slot, err)
	}
	for _, w := range want {
		if !slices.ContainsFunc(mechs, func(x *p11.Mechanism) bool { return x.Mechanism == w }) {
			return w, true, nil
		}
	}
	return 0, false, nil
}

// login logs the session's token in. The login state belongs to the token
// and the whole process: another session may have logged in already.
func (m *module) login(sess p11.SessionHandle, userType uint, pin []byte, tokenName string) error {
	err := m.ctx.Login(sess, userType, string(pin))
	switch code(err) {
	case p11.CKR_OK, p11.CKR_USER_ALREADY_LOGGED_IN:
		return nil
	case p11.CKR_PIN_INCORRECT:
		return fmt.Errorf("pkcs11: wrong PIN for token %s (CKR_PIN_INCORRECT; on a real HSM, repeated wrong PINs lock the token)", tokenName)
	case p11.CKR_PIN_LOCKED:
		return fmt.Errorf("pkcs11: the PIN of token %s is locked (CKR_PIN_LOCKED): too many wrong PINs; the security officer must reset it", tokenName)
	case p11.CKR_PIN_LEN_RANGE:
		return fmt.Errorf("pkcs11: the PIN for token %s has a length the token refuses (CKR_PIN_LEN_RANGE)", tokenName)
	default:
		return fmt.Errorf("pkcs11: log in to token %s: %w", tokenName, err)
	}
}

// findObjects returns the handles of objects matching template.
func (m *module) findObjects(sess p11.SessionHandle, template []*p11.Attribute) ([]p11.ObjectHandle, error) {
	if err := m.ctx.FindObjectsInit(sess, template); err != nil {
		return nil, err
	}
	var out []p11.ObjectHandle
	for {
		hs, _, err := m.ctx.FindObjects(sess, 64)
		if err != nil {
			_ = m.ctx.FindObjectsFinal(sess)
			return nil, err
		}
		if len(hs) == 0 {
			break
		}
		out = append(out, hs...)
	}
	return out, m.ctx.FindObjectsFinal(sess)
}

// keyObject finds the one object of class labelled label.
func (m *module) keyObject(sess p11.SessionHandle, class uint, label string) (p11.ObjectHandle, int, error) {
	hs, err := m.findObjects(sess, []*p11.Attribute{
		p11.NewAttribute(p11.CKA_CLASS, class),
		p11.NewAttribute(p11.CKA_LABEL, label),
	})
	if err != nil || len(hs) != 1 {
		return 0, len(hs), err
	}
	return hs[0], 1, nil
}

// ulong reads a CK_ULONG attribute value, which the module stores in the
// host's byte order and size.
func ulong(v []byte) uint {
	switch len(v) {
	case 8:
		return uint(binary.NativeEndian.Uint64(v))
	case 4:
		return uint(binary.NativeEndian.Uint32(v))
	}
	return ^uint(0)
}

// code is the CKR_ value of a PKCS#11 error (CKR_OK for nil, and
// CKR_GENERAL_ERROR for an error that is not one).
func code(err error) uint {
	if err == nil {
		return p11.CKR_OK
	}
	var e p11.Error
	if errors.As(err, &e) {
		return uint(e)
	}
	return p11.CKR_GENERAL_ERROR
}
