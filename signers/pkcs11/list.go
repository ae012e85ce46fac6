//go:build cgo

package pkcs11

import (
	"fmt"

	p11 "github.com/miekg/pkcs11"
)

// List describes the slots of module, their tokens and the tokens'
// objects. Without a PIN only public objects are listed. A PIN is tried on
// one token only - the one labelled token, or the only initialised one -
// since every wrong PIN counts towards locking a real token.
func List(module, token string, pin []byte) ([]SlotInfo, error) {
	m, err := acquire(module, "")
	if err != nil {
		return nil, err
	}
	defer m.release()
	ids, err := m.ctx.GetSlotList(false)
	if err != nil {
		return nil, fmt.Errorf("pkcs11: module %s: C_GetSlotList: %w", module, err)
	}
	ts, err := m.tokens()
	if err != nil {
		return nil, err
	}
	if token != "" || len(pin) > 0 {
		var ready []tokenSlot
		found := false
		for _, t := range ts {
			if t.ready {
				ready = append(ready, t)
				found = found || t.info.Label == token
			}
		}
		switch {
		case token != "" && !found:
			_, err := m.findSlot(Config{Token: token})
			return nil, err
		case token == "" && len(ready) != 1:
			return nil, fmt.Errorf("pkcs11: %d initialised tokens in %s: name the one the PIN is for (a wrong PIN counts towards locking a token)", len(ready), module)
		case token == "":
			token = ready[0].info.Label
		}
	}
	var out []SlotInfo
	for _, id := range ids {
		si, err := m.ctx.GetSlotInfo(id)
		if err != nil {
			return nil, fmt.Errorf("pkcs11: slot %d: C_GetSlotInfo: %w", id, err)
		}
		slot := SlotInfo{ID: id, Description: si.SlotDescription, HasToken: si.Flags&p11.CKF_TOKEN_PRESENT != 0}
		if slot.HasToken {
			slot.Token, err = m.describeToken(id, token, pin)
			if err != nil {
				return nil, err
			}
		}
		out = append(out, slot)
	}
	return out, nil
}

// describeToken reads one token's info and objects; it logs in when the
// token is labelled loginTo and a PIN is given.
func (m *module) describeToken(id uint, loginTo string, pin []byte) (TokenInfo, error) {
	ti, err := m.ctx.GetTokenInfo(id)
	if err != nil {
		return TokenInfo{}, fmt.Errorf("pkcs11: slot %d: C_GetTokenInfo: %w", id, err)
	}
	t := TokenInfo{Label: ti.Label, Manufacturer: ti.ManufacturerID, Model: ti.Model, Serial: ti.SerialNumber,
		Initialized: ti.Flags&p11.CKF_TOKEN_INITIALIZED != 0}
	if !t.Initialized {
		t.Note = "not initialised"
		return t, nil
	}
	_, missing, err := m.missingMechanism(id, ckmEdDSA)
	t.EdDSA = err == nil && !missing
	sess, err := m.ctx.OpenSession(id, p11.CKF_SERIAL_SESSION)
	if err != nil {
		t.Note = "cannot open a session: " + err.Error()
		return t, nil
	}
	// Closing the token's last session logs it out again.
	defer m.ctx.CloseSession(sess)
	switch {
	case len(pin) > 0 && ti.Label == loginTo:
		if err := m.login(sess, p11.CKU_USER, pin, fmt.Sprintf("%q", ti.Label)); err != nil {
			return t, err
		}
		t.LoggedIn = true
	case ti.Flags&p11.CKF_LOGIN_REQUIRED != 0:
		t.Note = "public objects only: give the PIN to see private keys"
	}
	hs, err := m.findObjects(sess, nil)
	if err != nil {
		t.Note = "cannot list objects: " + err.Error()
		return t, nil
	}
	for _, h := range hs {
		t.Objects = append(t.Objects, m.describeObject(sess, h))
	}
	return t, nil
}

func (m *module) describeObject(sess p11.SessionHandle, h p11.ObjectHandle) Object {
	var o Object
	attrs, err := m.ctx.GetAttributeValue(sess, h, []*p11.Attribute{
		p11.NewAttribute(p11.CKA_CLASS, nil), p11.NewAttribute(p11.CKA_LABEL, nil),
	})
	if err != nil {
		o.Class = "unreadable (" + err.Error() + ")"
		return o
	}
	class := ulong(attrs[0].Value)
	o.Class, o.Label = className(class), string(attrs[1].Value)
	if class != p11.CKO_PRIVATE_KEY && class != p11.CKO_PUBLIC_KEY && class != p11.CKO_SECRET_KEY {
		return o
	}
	kt, err := m.ctx.GetAttributeValue(sess, h, []*p11.Attribute{p11.NewAttribute(p11.CKA_KEY_TYPE, nil)})
	if err != nil {
		return o
	}
	o.KeyType = keyTypeName(ulong(kt[0].Value))
	if class == p11.CKO_PUBLIC_KEY && ulong(kt[0].Value) == ckkECEdwards {
		if pub, err := m.ecPoint(sess, h); err == nil {
			o.KeyType, o.PubKey = "Ed25519", pub
		}
	}
	return o
}

func className(c uint) string {
	switch c {
	case p11.CKO_PRIVATE_KEY:
		return "private key"
	case p11.CKO_PUBLIC_KEY:
		return "public key"
	case p11.CKO_SECRET_KEY:
		return "secret key"
	case p11.CKO_CERTIFICATE:
		return "certificate"
	case p11.CKO_DATA:
		return "data"
	}
	return fmt.Sprintf("object class 0x%x", c)
}

func keyTypeName(t uint) string {
	switch t {
	case ckkECEdwards:
		return "EdDSA"
	case p11.CKK_EC:
		return "EC (ECDSA)"
	case p11.CKK_RSA:
		return "RSA"
	case p11.CKK_AES:
		return "AES"
	case p11.CKK_GENERIC_SECRET:
		return "generic secret"
	case 0x41:
		return "EC Montgomery (X25519)"
	}
	return fmt.Sprintf("key type 0x%x", t)
}

func mechanismName(m uint) string {
	switch m {
	case ckmEdDSA:
		return "CKM_EDDSA, Ed25519 signing"
	case ckmECEdwardsKeyPairGen:
		return "CKM_EC_EDWARDS_KEY_PAIR_GEN, Ed25519 key generation"
	}
	return "unknown"
}
