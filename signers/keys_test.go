package signers

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cometbft/cometbft/types"
)

func TestGenKey(t *testing.T) {
	msg := []byte("sign bytes")
	for _, kt := range KeyTypes {
		t.Run(kt, func(t *testing.T) {
			a, err := GenKey(kt, []byte("validator-0"))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := GenKey(kt, []byte("validator-0"))
			c, _ := GenKey(kt, []byte("validator-1"))
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Error("same secret gave different keys")
			}
			if bytes.Equal(a.Bytes(), c.Bytes()) {
				t.Error("different secrets gave the same key")
			}
			if a.Type() != kt || KeyTypeOf(a.PubKey()) != kt {
				t.Errorf("type %q, KeyTypeOf %q, want %q", a.Type(), KeyTypeOf(a.PubKey()), kt)
			}
			sig, err := a.Sign(msg)
			if err != nil {
				t.Fatal(err)
			}
			if !a.PubKey().VerifySignature(msg, sig) {
				t.Error("signature does not verify")
			}
			if c.PubKey().VerifySignature(msg, sig) {
				t.Error("signature verifies under another key")
			}
		})
	}
}

func TestGenKeyErrors(t *testing.T) {
	_, err := GenKey("bls12_381", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "allowed: ed25519, secp256k1") {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := GenKey(KeyTypeEd25519, nil); err == nil {
		t.Error("empty secret accepted")
	}
}

func TestABCIKeyType(t *testing.T) {
	for kt, want := range map[string]string{
		KeyTypeEd25519:   types.ABCIPubKeyTypeEd25519,
		KeyTypeSecp256k1: types.ABCIPubKeyTypeSecp256k1,
	} {
		got, err := ABCIKeyType(kt)
		if err != nil || got != want {
			t.Errorf("ABCIKeyType(%q) = %q, %v; want %q", kt, got, err, want)
		}
		// Consensus params must know the name, or validators are refused.
		if _, ok := types.ABCIPubKeyTypesToNames[got]; !ok {
			t.Errorf("%q is not a consensus params key type", got)
		}
	}
	if _, err := ABCIKeyType("rsa"); err == nil {
		t.Error("unknown type accepted")
	}
}
