package signers

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/valnet/valnet/internal/secret"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/cometbft/cometbft/crypto"
	"golang.org/x/crypto/blowfish"
	"golang.org/x/crypto/nacl/secretbox"
	"golang.org/x/crypto/openpgp/armor" //nolint:staticcheck // tm2 armors keys with it; same format
)

// The encrypted key file keeps a key the way gnokey does (tm2
// crypto/keys/armor): key = SHA-256(bcrypt(passphrase, 16-byte random salt,
// cost)), where bcrypt's output is the full "$2a$CC$<salt><hash>" string;
// the private key bytes are sealed with NaCl secretbox (xsalsa20-poly1305)
// under a random 24-byte nonce prepended to the box; the result is an
// OpenPGP ASCII armor block "TENDERMINT PRIVATE KEY" with headers
// kdf: bcrypt and salt: <HEX>. valnet adds three headers: type (the
// plaintext is the raw key, not tm2's amino encoding), cost (tm2 hard-codes
// 12; a file without it is read at 12) and pubkey (so a genesis can be built
// without the passphrase).

// Key file signing modes.
const (
	// ModeEverySign re-derives the key with bcrypt and decrypts it for
	// every signature, as gnokms+gnokey does: one bcrypt per signature.
	ModeEverySign = "every-sign"
	// ModeOnce decrypts at open and keeps the key in memory.
	ModeOnce = "once"
)

const (
	// DefaultKeyFileCost is tm2 armor's bcryptSecurityParameter.
	DefaultKeyFileCost = 12
	bcryptMinCost      = 4
	bcryptMaxCost      = 31
	// bcrypt reads at most 72 bytes of passphrase; more would be silently
	// ignored, so it is refused.
	bcryptMaxPassphrase = 72

	keyFileBlockType = "TENDERMINT PRIVATE KEY"
	keyFileKDF       = "bcrypt"
	keyFileSaltLen   = 16
	keyFileNonceLen  = 24

	hdrKDF    = "kdf"
	hdrSalt   = "salt"
	hdrType   = "type"
	hdrCost   = "cost"
	hdrPubKey = "pubkey"
)

// KeyFileHeader is what a key file tells without its passphrase.
type KeyFileHeader struct {
	KDF  string
	Salt []byte
	Cost int
	Type string
	// PubKey is nil when the file does not store one (tm2's files do not).
	PubKey crypto.PubKey
}

// KeyFileInfo reads the headers of the key file at path (kdf, salt, cost,
// type) and its public key if stored, without decrypting.
func KeyFileInfo(path string) (KeyFileHeader, error) {
	kf, err := readKeyFile(path)
	if err != nil {
		return KeyFileHeader{}, err
	}
	return kf.hdr, nil
}

// kdfFunc turns a passphrase into the 32-byte secretbox key.
type kdfFunc func(passphrase, salt []byte, cost int) ([32]byte, error)

// KeyfileSigner signs with a key kept encrypted in a key file.
type KeyfileSigner struct {
	path string
	mode string
	pub  crypto.PubKey
	file *keyFile
	kdf  kdfFunc // a field so a test can count derivations

	mu     sync.RWMutex // Sign reads key/pass; Close zeroes them
	closed bool
	key    crypto.PrivKey // ModeOnce only
	pass   []byte         // ModeEverySign only: gnokms keeps the passphrase, not the key
}

var _ KeySigner = (*KeyfileSigner)(nil)

// WriteKeyFile encrypts key with passphrase at bcrypt cost and writes the
// armored file atomically (0600), refusing to overwrite an existing file.
func WriteKeyFile(path string, key crypto.PrivKey, passphrase []byte, cost int) error {
	fail := func(err error) error { return fmt.Errorf("keyfile %s: %w", path, err) }
	if err := checkCost(cost); err != nil {
		return fail(err)
	}
	if err := checkPassphrase(passphrase); err != nil {
		return fail(err)
	}
	keyType := key.Type()
	plain := key.Bytes()
	if _, err := privKeyFromBytes(keyType, plain); err != nil {
		return fail(err)
	}
	// Refuse before paying for bcrypt; the final link refuses again, race-free.
	if _, err := os.Lstat(path); err == nil {
		return fail(errExists)
	}

	salt := make([]byte, keyFileSaltLen)
	var nonce [keyFileNonceLen]byte
	if _, err := io.ReadFull(rand.Reader, salt); err != nil {
		return fail(err)
	}
	if _, err := io.ReadFull(rand.Reader, nonce[:]); err != nil {
		return fail(err)
	}
	secret, err := bcryptKDF(passphrase, salt, cost)
	if err != nil {
		return fail(err)
	}
	box := secretbox.Seal(nonce[:], plain, &nonce, &secret)
	clear(secret[:])

	var buf bytes.Buffer
	w, err := armor.Encode(&buf, keyFileBlockType, map[string]string{
		hdrKDF:    keyFileKDF,
		hdrSalt:   fmt.Sprintf("%X", salt),
		hdrCost:   strconv.Itoa(cost),
		hdrType:   keyType,
		hdrPubKey: fmt.Sprintf("%X", key.PubKey().Bytes()),
	})
	if err == nil {
		_, err = w.Write(box)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return fail(err)
	}
	buf.WriteByte('\n')
	if err := writeNewFile(path, buf.Bytes()); err != nil {
		return fail(err)
	}
	return nil
}

// OpenKeyFile opens the key file at path for signing in mode (ModeEverySign
// or ModeOnce). It always decrypts once, so a wrong passphrase fails here,
// before any network starts, and the public key is known from then on.
func OpenKeyFile(path string, passphrase []byte, mode string) (*KeyfileSigner, error) {
	if mode != ModeEverySign && mode != ModeOnce {
		return nil, fmt.Errorf("keyfile %s: unknown mode %q (allowed: %s, %s)", path, mode, ModeEverySign, ModeOnce)
	}
	if err := checkPassphrase(passphrase); err != nil {
		return nil, fmt.Errorf("keyfile %s: %w", path, err)
	}
	kf, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	key, plain, err := kf.decrypt(passphrase, bcryptKDF)
	if err != nil {
		return nil, err
	}
	pub := key.PubKey()
	if kf.hdr.PubKey != nil && !bytes.Equal(kf.hdr.PubKey.Bytes(), pub.Bytes()) {
		clear(plain)
		return nil, fmt.Errorf("keyfile %s: pubkey header does not match the encrypted key", path)
	}
	k := &KeyfileSigner{path: path, mode: mode, pub: pub, file: kf, kdf: bcryptKDF}
	if mode == ModeOnce {
		k.key = key
	} else {
		clear(plain)
		k.pass = bytes.Clone(passphrase)
	}
	return k, nil
}

// Mode is the signing mode the file was opened in.
func (k *KeyfileSigner) Mode() string { return k.mode }

// Path is the key file's path.
func (k *KeyfileSigner) Path() string { return k.path }

// PubKey is the key's public half, learned at open.
func (k *KeyfileSigner) PubKey() crypto.PubKey { return k.pub }

// Sign signs msg. In ModeEverySign it first pays one bcrypt to decrypt the
// key, and zeroes the plaintext once the signature is made.
func (k *KeyfileSigner) Sign(_ string, msg []byte) ([]byte, error) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.closed {
		return nil, fmt.Errorf("keyfile %s: signer is closed", k.path)
	}
	if k.mode == ModeOnce {
		return k.key.Sign(msg)
	}
	key, plain, err := k.file.decrypt(k.pass, k.kdf)
	if err != nil {
		return nil, err
	}
	defer clear(plain)
	return key.Sign(msg)
}

// Close zeroes the key or passphrase held in memory; Sign fails after it.
func (k *KeyfileSigner) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil
	}
	k.closed = true
	if k.key != nil {
		clear(k.key.Bytes())
		k.key = nil
	}
	clear(k.pass)
	k.pass = nil
	return nil
}

// passphrase is where a key file's passphrase comes from.
var passphrase = secret.Source{What: "passphrase", EnvKey: "passphrase_env", FileKey: "passphrase_file"}

// ReadPassphrase reads a key file passphrase from the environment variable
// env or from file (one of them, the other empty); see secret.Source.Read.
func ReadPassphrase(env, file string) ([]byte, error) { return passphrase.Read(env, file) }

// keyFile is a parsed key file: its headers and the sealed key.
type keyFile struct {
	path string
	hdr  KeyFileHeader
	box  []byte // nonce || secretbox
}

func readKeyFile(path string) (*keyFile, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("keyfile %s: "+format, append([]any{path}, args...)...)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fail("no such file")
		}
		return nil, fail("%w", err)
	}
	block, err := armor.Decode(bytes.NewReader(data))
	if errors.Is(err, io.EOF) {
		return nil, fail("not an armored key file (no -----BEGIN block)")
	}
	if err != nil {
		return nil, fail("not an armored key file: %v", err)
	}
	if block.Type != keyFileBlockType {
		return nil, fail("armor block is %q, want %q", block.Type, keyFileBlockType)
	}
	// The CRC24 is checked as the body is read to its end.
	box, err := io.ReadAll(block.Body)
	if err != nil {
		return nil, fail("corrupt armor body: %v", err)
	}
	h := block.Header
	kf := &keyFile{path: path, box: box, hdr: KeyFileHeader{KDF: h[hdrKDF], Type: h[hdrType], Cost: DefaultKeyFileCost}}
	if kf.hdr.KDF != keyFileKDF {
		return nil, fail("unsupported kdf %q (want %q)", kf.hdr.KDF, keyFileKDF)
	}
	kf.hdr.Salt, err = hex.DecodeString(h[hdrSalt])
	if err != nil || len(kf.hdr.Salt) != keyFileSaltLen {
		return nil, fail("bad salt %q (want %d bytes in hex)", h[hdrSalt], keyFileSaltLen)
	}
	if c, ok := h[hdrCost]; ok {
		kf.hdr.Cost, err = strconv.Atoi(c)
		if err != nil {
			return nil, fail("bad cost %q", c)
		}
		if err := checkCost(kf.hdr.Cost); err != nil {
			return nil, fail("%w", err)
		}
	}
	if kf.hdr.Type == "" {
		return nil, fail("no type header (valnet writes one; tm2's amino-encoded keys are not supported)")
	}
	if _, err := ABCIKeyType(kf.hdr.Type); err != nil {
		return nil, fail("type header: %w", err)
	}
	if p, ok := h[hdrPubKey]; ok {
		b, err := hex.DecodeString(p)
		if err == nil {
			kf.hdr.PubKey, err = pubKeyFromBytes(kf.hdr.Type, b)
		}
		if err != nil {
			return nil, fail("bad pubkey header: %v", err)
		}
	}
	if len(box) <= keyFileNonceLen+secretbox.Overhead {
		return nil, fail("corrupt ciphertext: %d bytes is too short", len(box))
	}
	return kf, nil
}

// decrypt derives the key with kdf and opens the box. The returned key
// aliases plain; the caller zeroes plain when done with the key.
func (kf *keyFile) decrypt(passphrase []byte, kdf kdfFunc) (crypto.PrivKey, []byte, error) {
	secret, err := kdf(passphrase, kf.hdr.Salt, kf.hdr.Cost)
	if err != nil {
		return nil, nil, fmt.Errorf("keyfile %s: %w", kf.path, err)
	}
	defer clear(secret[:])
	var nonce [keyFileNonceLen]byte
	copy(nonce[:], kf.box)
	plain, ok := secretbox.Open(nil, kf.box[keyFileNonceLen:], &nonce, &secret)
	if !ok {
		// Poly1305 cannot tell a wrong key from a changed box; the armor
		// CRC has already caught accidental damage.
		return nil, nil, fmt.Errorf("keyfile %s: wrong passphrase (decryption failed)", kf.path)
	}
	key, err := privKeyFromBytes(kf.hdr.Type, plain)
	if err != nil {
		clear(plain)
		return nil, nil, fmt.Errorf("keyfile %s: corrupt key: %w", kf.path, err)
	}
	return key, plain, nil
}

func checkCost(cost int) error {
	if cost < bcryptMinCost || cost > bcryptMaxCost {
		return fmt.Errorf("bcrypt cost %d is outside %d..%d", cost, bcryptMinCost, bcryptMaxCost)
	}
	return nil
}

func checkPassphrase(p []byte) error {
	switch {
	case len(p) == 0:
		// tm2 skips bcrypt for an empty passphrase: the key would be a
		// constant. Refuse instead.
		return errors.New("empty passphrase")
	case len(p) > bcryptMaxPassphrase:
		return fmt.Errorf("passphrase is %d bytes; bcrypt uses at most %d", len(p), bcryptMaxPassphrase)
	}
	return nil
}

// bcryptKDF is tm2 armor's key derivation: SHA-256 of the bcrypt string.
func bcryptKDF(passphrase, salt []byte, cost int) ([32]byte, error) {
	h, err := bcryptHash(passphrase, salt, cost)
	if err != nil {
		return [32]byte{}, err
	}
	defer clear(h)
	return sha256.Sum256(h), nil
}

// bcryptB64 is bcrypt's own base64: its alphabet, no padding.
var bcryptB64 = base64.NewEncoding("./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789").WithPadding(base64.NoPadding)

// bcryptHash returns "$2a$CC$<salt 22><hash 31>", the bcrypt of password
// with the given 16-byte salt. x/crypto/bcrypt always draws its own salt, so
// this redoes its bcrypt() and expensiveBlowfishSetup() (bcrypt/bcrypt.go,
// x/crypto v0.32.0) with ours, as tm2's fork of it does;
// TestBcryptHashMatchesXCrypto checks the output against x/crypto/bcrypt.
func bcryptHash(password, salt []byte, cost int) ([]byte, error) {
	if len(salt) != keyFileSaltLen {
		return nil, fmt.Errorf("bcrypt salt is %d bytes, want %d", len(salt), keyFileSaltLen)
	}
	if err := checkCost(cost); err != nil {
		return nil, err
	}
	// C bcrypt expands the key with its trailing NUL; so must we.
	ckey := append(bytes.Clone(password), 0)
	defer clear(ckey)
	c, err := blowfish.NewSaltedCipher(ckey, salt)
	if err != nil {
		return nil, err
	}
	for range 1 << cost {
		blowfish.ExpandKey(ckey, c)
		blowfish.ExpandKey(salt, c)
	}
	data := []byte("OrpheanBeholderScryDoubt")
	for i := 0; i < len(data); i += 8 {
		for range 64 {
			c.Encrypt(data[i:i+8], data[i:i+8])
		}
	}
	out := fmt.Appendf(nil, "$2a$%02d$", cost)
	out = bcryptB64.AppendEncode(out, salt)
	// C bcrypt keeps only 23 of the 24 bytes.
	return bcryptB64.AppendEncode(out, data[:23]), nil
}

var errExists = fmt.Errorf("%w; refusing to overwrite a key file", fs.ErrExist)

// writeNewFile writes data to path (0600) atomically: readers see no file
// or the whole file. A hard link publishes the temporary file and fails if
// path exists, so an existing key is never overwritten, even in a race.
func writeNewFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*") // 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errExists
		}
		// A file system without hard links: rename, after a last check.
		if _, serr := os.Lstat(path); serr == nil {
			return errExists
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return err
		}
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the new name durable; best effort
		d.Close()
	}
	return nil
}
