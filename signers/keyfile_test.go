package signers

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/crypto/openpgp/armor" //nolint:staticcheck // the key file format

	"github.com/valnet/valnet/internal/phase"
)

// testCost keeps tests fast; bcrypt's minimum.
const testCost = 4

var testPass = []byte("correct horse battery staple")

// signBytes is about the size of a CometBFT vote's sign bytes.
var signBytes = bytes.Repeat([]byte{0xab}, 110)

func writeTestKeyFile(t testing.TB, keyType string, cost int) (string, []byte) {
	t.Helper()
	key, err := GenKey(keyType, []byte("keyfile-test"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "priv_key.armor")
	if err := WriteKeyFile(path, key, testPass, cost); err != nil {
		t.Fatal(err)
	}
	return path, key.PubKey().Bytes()
}

func TestKeyFileRoundTrip(t *testing.T) {
	for _, kt := range KeyTypes {
		for _, mode := range []string{ModeEverySign, ModeOnce} {
			t.Run(kt+"/"+mode, func(t *testing.T) {
				path, pub := writeTestKeyFile(t, kt, testCost)
				st, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != 0o600 {
					t.Errorf("mode %v, want 0600", st.Mode().Perm())
				}
				info, err := KeyFileInfo(path)
				if err != nil {
					t.Fatal(err)
				}
				if info.KDF != "bcrypt" || info.Type != kt || info.Cost != testCost || len(info.Salt) != 16 ||
					info.PubKey == nil || !bytes.Equal(info.PubKey.Bytes(), pub) {
					t.Errorf("info %+v", info)
				}

				k, err := OpenKeyFile(path, testPass, mode)
				if err != nil {
					t.Fatal(err)
				}
				if k.Mode() != mode || !bytes.Equal(k.PubKey().Bytes(), pub) {
					t.Errorf("mode %q pub %X", k.Mode(), k.PubKey().Bytes())
				}
				for range 2 {
					sig, err := k.Sign(phase.Prevote, signBytes)
					if err != nil {
						t.Fatal(err)
					}
					if !k.PubKey().VerifySignature(signBytes, sig) {
						t.Fatal("signature does not verify")
					}
				}
				if err := k.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := k.Sign(phase.Prevote, signBytes); err == nil {
					t.Error("signed after Close")
				}
			})
		}
	}
}

// The key in the file is the key that was written: ed25519 signatures are
// deterministic, so both modes must sign exactly as the in-memory key does.
func TestKeyFileSignsAsTheKey(t *testing.T) {
	key, _ := GenKey(KeyTypeEd25519, []byte("keyfile-test"))
	want, _ := PrivKeySigner{Key: key}.Sign(KindBytes, signBytes)
	path, _ := writeTestKeyFile(t, KeyTypeEd25519, testCost)
	for _, mode := range []string{ModeEverySign, ModeOnce} {
		k, err := OpenKeyFile(path, testPass, mode)
		if err != nil {
			t.Fatal(err)
		}
		got, err := k.Sign(KindBytes, signBytes)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: signature differs from the key's (%v)", mode, err)
		}
	}
}

func TestKeyFileEverySignRederives(t *testing.T) {
	path, _ := writeTestKeyFile(t, KeyTypeEd25519, testCost)
	for mode, want := range map[string]int{ModeEverySign: 3, ModeOnce: 0} {
		k, err := OpenKeyFile(path, testPass, mode)
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		k.kdf = func(p, s []byte, c int) ([32]byte, error) {
			calls++
			return bcryptKDF(p, s, c)
		}
		for range 3 {
			if _, err := k.Sign(phase.Precommit, signBytes); err != nil {
				t.Fatal(err)
			}
		}
		if calls != want {
			t.Errorf("%s: %d key derivations for 3 signatures, want %d", mode, calls, want)
		}
	}
}

func TestKeyFileWrongPassphrase(t *testing.T) {
	path, _ := writeTestKeyFile(t, KeyTypeSecp256k1, testCost)
	for _, mode := range []string{ModeEverySign, ModeOnce} {
		_, err := OpenKeyFile(path, []byte("wrong"), mode)
		if err == nil || err.Error() != "keyfile "+path+": wrong passphrase (decryption failed)" {
			t.Errorf("%s: %v", mode, err)
		}
	}
}

func TestWriteKeyFileRefusesOverwrite(t *testing.T) {
	path, _ := writeTestKeyFile(t, KeyTypeEd25519, testCost)
	before, _ := os.ReadFile(path)
	other, _ := GenKey(KeyTypeEd25519, []byte("other"))
	err := WriteKeyFile(path, other, testPass, testCost)
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("overwrite: %v", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("existing key file changed")
	}
	// The loser of a race is refused too (the early check is bypassed).
	if err := writeNewFile(path, []byte("x")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("writeNewFile over an existing file: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestWriteKeyFileRefusesBadInput(t *testing.T) {
	key, _ := GenKey(KeyTypeEd25519, []byte("x"))
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		pass []byte
		cost int
		want string
	}{
		"cost too low":  {testPass, 3, "bcrypt cost 3 is outside 4..31"},
		"cost too high": {testPass, 32, "bcrypt cost 32 is outside 4..31"},
		"empty pass":    {nil, testCost, "empty passphrase"},
		"long pass":     {bytes.Repeat([]byte("a"), 73), testCost, "at most 72"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		err := WriteKeyFile(path, key, tc.pass, tc.cost)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s: file written", name)
		}
	}
}

func TestOpenKeyFileUnknownMode(t *testing.T) {
	path, _ := writeTestKeyFile(t, KeyTypeEd25519, testCost)
	if _, err := OpenKeyFile(path, testPass, "sometimes"); err == nil || !strings.Contains(err.Error(), "every-sign, once") {
		t.Errorf("unknown mode: %v", err)
	}
}

// rearmor re-encodes a good key file after edit changes its block type,
// headers or sealed body, with a valid armor checksum.
func rearmor(t *testing.T, good string, edit func(typ *string, h map[string]string, box []byte) []byte) []byte {
	t.Helper()
	f, err := os.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block, err := armor.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	box, err := io.ReadAll(block.Body)
	if err != nil {
		t.Fatal(err)
	}
	typ := block.Type
	box = edit(&typ, block.Header, box)
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, typ, block.Header)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(box)
	w.Close()
	return buf.Bytes()
}

func TestKeyFileBadFiles(t *testing.T) {
	good, _ := writeTestKeyFile(t, KeyTypeEd25519, testCost)
	goodBytes, _ := os.ReadFile(good)
	other, _ := GenKey(KeyTypeEd25519, []byte("other"))
	header := func(k, v string) func(*string, map[string]string, []byte) []byte {
		return func(_ *string, h map[string]string, box []byte) []byte {
			if v == "" {
				delete(h, k)
			} else {
				h[k] = v
			}
			return box
		}
	}
	for _, tc := range []struct {
		name string
		data func(t *testing.T) []byte // nil: no file at all
		want string
	}{
		{"missing file", nil, "no such file"},
		{"not armor", func(*testing.T) []byte { return []byte(`{"priv_key": "..."}`) }, "not an armored key file"},
		{"armor checksum", func(*testing.T) []byte {
			// Flip one base64 character of the body: the CRC24 catches it.
			b := bytes.Clone(goodBytes)
			i := bytes.Index(b, []byte("\n\n")) + 5
			if b[i] == 'A' {
				b[i] = 'B'
			} else {
				b[i] = 'A'
			}
			return b
		}, "corrupt armor body"},
		{"wrong block type", func(t *testing.T) []byte {
			return rearmor(t, good, func(typ *string, _ map[string]string, box []byte) []byte {
				*typ = "TENDERMINT KEY INFO"
				return box
			})
		}, `armor block is "TENDERMINT KEY INFO", want "TENDERMINT PRIVATE KEY"`},
		{"unsupported kdf", func(t *testing.T) []byte { return rearmor(t, good, header("kdf", "scrypt")) }, `unsupported kdf "scrypt"`},
		{"no kdf", func(t *testing.T) []byte { return rearmor(t, good, header("kdf", "")) }, `unsupported kdf ""`},
		{"salt not hex", func(t *testing.T) []byte { return rearmor(t, good, header("salt", "XYZ")) }, "bad salt"},
		{"salt too short", func(t *testing.T) []byte { return rearmor(t, good, header("salt", "00112233")) }, "bad salt"},
		{"bad cost", func(t *testing.T) []byte { return rearmor(t, good, header("cost", "40")) }, "bcrypt cost 40 is outside"},
		{"no type", func(t *testing.T) []byte { return rearmor(t, good, header("type", "")) }, "no type header"},
		{"unknown type", func(t *testing.T) []byte { return rearmor(t, good, header("type", "rsa")) }, `unknown key type "rsa"`},
		{"bad pubkey", func(t *testing.T) []byte { return rearmor(t, good, header("pubkey", "00")) }, "bad pubkey header"},
		{"other pubkey", func(t *testing.T) []byte {
			return rearmor(t, good, header("pubkey", hex.EncodeToString(other.PubKey().Bytes())))
		}, "pubkey header does not match the encrypted key"},
		{"truncated ciphertext", func(t *testing.T) []byte {
			return rearmor(t, good, func(_ *string, _ map[string]string, box []byte) []byte { return box[:30] })
		}, "corrupt ciphertext"},
		{"tampered ciphertext", func(t *testing.T) []byte {
			// A valid checksum over a changed box: only Poly1305 sees it.
			return rearmor(t, good, func(_ *string, _ map[string]string, box []byte) []byte {
				box[len(box)-1] ^= 1
				return box
			})
		}, "wrong passphrase (decryption failed)"},
		{"tampered nonce", func(t *testing.T) []byte {
			return rearmor(t, good, func(_ *string, _ map[string]string, box []byte) []byte {
				box[0] ^= 1
				return box
			})
		}, "wrong passphrase (decryption failed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "key.armor")
			if tc.data != nil {
				if err := os.WriteFile(path, tc.data(t), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := OpenKeyFile(path, testPass, ModeOnce)
			if err == nil || !strings.HasPrefix(err.Error(), "keyfile "+path+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want keyfile %s: ...%s...", err, path, tc.want)
			}
		})
	}
}

// A file without the cost header (as tm2 writes) is read at tm2's cost.
func TestKeyFileDefaultCost(t *testing.T) {
	good, _ := writeTestKeyFile(t, KeyTypeEd25519, testCost)
	path := filepath.Join(t.TempDir(), "tm2.armor")
	data := rearmor(t, good, func(_ *string, h map[string]string, box []byte) []byte {
		delete(h, "cost")
		delete(h, "pubkey")
		return box
	})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	info, err := KeyFileInfo(path)
	if err != nil || info.Cost != DefaultKeyFileCost || info.PubKey != nil {
		t.Errorf("info %+v, %v", info, err)
	}
}

// bcryptHash is real bcrypt: given the salt x/crypto/bcrypt drew, it
// reproduces x/crypto/bcrypt's hash string byte for byte.
func TestBcryptHashMatchesXCrypto(t *testing.T) {
	for _, pass := range [][]byte{
		[]byte("a"),
		testPass,
		[]byte("pässwörd\x00with nul"),
		bytes.Repeat([]byte("x"), 72),
	} {
		for _, cost := range []int{4, 5, 6} {
			want, err := bcrypt.GenerateFromPassword(pass, cost)
			if err != nil {
				t.Fatal(err)
			}
			// "$2a$CC$" then 22 characters of salt.
			salt, err := bcryptB64.DecodeString(string(want[7:29]))
			if err != nil || len(salt) != 16 {
				t.Fatalf("salt of %s: %v (%d bytes)", want, err, len(salt))
			}
			got, err := bcryptHash(pass, salt, cost)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("cost %d pass %q:\n got %s\nwant %s", cost, pass, got, want)
			}
			if len(got) != 60 {
				t.Errorf("hash is %d bytes, want 60", len(got))
			}
		}
	}
}

func TestReadPassphrase(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil { // umask may have narrowed it
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("VALNET_TEST_PASS", "from env")
	t.Setenv("VALNET_TEST_EMPTY", "")
	for _, tc := range []struct {
		name, env, file string
		want, err       string
	}{
		{name: "env", env: "VALNET_TEST_PASS", want: "from env"},
		{name: "env unset", env: "VALNET_TEST_UNSET", err: "passphrase_env VALNET_TEST_UNSET is not set"},
		{name: "env empty", env: "VALNET_TEST_EMPTY", err: "passphrase_env VALNET_TEST_EMPTY is not set"},
		{name: "file", file: file("p1", "s3cret\n", 0o600), want: "s3cret"},
		{name: "file crlf", file: file("p2", "s3cret\r\n", 0o400), want: "s3cret"},
		{name: "file no newline", file: file("p3", "s 3", 0o600), want: "s 3"},
		{name: "file empty", file: file("p4", "\n", 0o600), err: "is empty"},
		{name: "file group readable", file: file("p5", "x", 0o640), err: "is readable by others (chmod 600)"},
		{name: "file world readable", file: file("p6", "x", 0o604), err: "is readable by others (chmod 600)"},
		{name: "file missing", file: filepath.Join(dir, "nope"), err: "no such file"},
		{name: "both", env: "VALNET_TEST_PASS", file: "x", err: "not both"},
		{name: "neither", err: "give passphrase_env or passphrase_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadPassphrase(tc.env, tc.file)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("got %q, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// BenchmarkKeyfileSign prices one signature: every-sign pays a bcrypt per
// signature (gnokms+gnokey), once pays only the signature.
func BenchmarkKeyfileSign(b *testing.B) {
	for _, bc := range []struct {
		name string
		mode string
		cost int
	}{
		{"every-sign-cost12", ModeEverySign, 12},
		{"once", ModeOnce, 12},
		{"every-sign-cost10", ModeEverySign, 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			path, _ := writeTestKeyFile(b, KeyTypeEd25519, bc.cost)
			k, err := OpenKeyFile(path, testPass, bc.mode)
			if err != nil {
				b.Fatal(err)
			}
			defer k.Close()
			for b.Loop() {
				if _, err := k.Sign(phase.Prevote, signBytes); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
