//go:build cgo

package pkcs11

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	p11 "github.com/miekg/pkcs11"
)

// NeedSoftHSM returns the SoftHSM2 module, or skips the test without it.
// With CI set, a missing SoftHSM2 fails the test instead: CI installs it
// (.ci/run), so its absence there is a broken setup, not a reason to skip.
func NeedSoftHSM(tb testing.TB) string {
	tb.Helper()
	mod, err := FindSoftHSM()
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("CI is set and %v", err)
		}
		tb.Skipf("skipping: %v", err)
	}
	return mod
}

// provision makes a token for one test; every signer of the test must be
// closed by its end (SoftHSM is re-initialised for the next test's dir).
func provision(t testing.TB, dir, token string) Config {
	t.Helper()
	NeedSoftHSM(t)
	cfg, err := Provision(dir, token, "")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func open(t testing.TB, cfg Config) *Signer {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// signAndVerify signs n random messages and checks each with Go's ed25519.
func signAndVerify(t testing.TB, s *Signer, n int) {
	t.Helper()
	pub := ed25519.PublicKey(s.PubKey().Bytes())
	for i := 0; i < n; i++ {
		msg := make([]byte, 100+i)
		rand.Read(msg)
		sig, err := s.Sign("prevote", msg)
		if err != nil {
			t.Fatalf("signature %d: %v", i, err)
		}
		if !ed25519.Verify(pub, msg, sig) {
			t.Fatalf("signature %d does not verify", i)
		}
	}
}

func TestProvisionSignVerify(t *testing.T) {
	dir := t.TempDir()
	cfg := provision(t, dir, "valnet-a")
	if cfg.Token != "valnet-a" || cfg.KeyLabel != DefaultKeyLabel || len(cfg.PIN) < 16 || cfg.Module == "" {
		t.Fatalf("config %+v", cfg)
	}
	conf, err := os.ReadFile(filepath.Join(dir, "softhsm2.conf"))
	if err != nil || !strings.Contains(string(conf), "directories.tokendir = "+filepath.Join(dir, "tokens")) ||
		!strings.Contains(string(conf), "objectstore.backend = file") || !strings.Contains(string(conf), "log.level = ERROR") {
		t.Errorf("softhsm2.conf: %s (%v)", conf, err)
	}
	if os.Getenv("SOFTHSM2_CONF") != filepath.Join(dir, "softhsm2.conf") {
		t.Errorf("SOFTHSM2_CONF = %q", os.Getenv("SOFTHSM2_CONF"))
	}
	pinFile := filepath.Join(dir, "valnet-a.pin")
	if st, err := os.Stat(pinFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("PIN file %s: %v %v", pinFile, st, err)
	}
	if pin, err := ReadPIN("", pinFile); err != nil || string(pin) != string(cfg.PIN) {
		t.Errorf("PIN file holds %q, config %q (%v)", pin, cfg.PIN, err)
	}
	s := open(t, cfg)
	if s.PubKey().Type() != "ed25519" || len(s.PubKey().Bytes()) != 32 {
		t.Fatalf("public key %v", s.PubKey())
	}
	signAndVerify(t, s, 100)
	if _, err := Provision(dir, "valnet-a", ""); err == nil || !strings.Contains(err.Error(), `token "valnet-a" already exists`) {
		t.Errorf("second provisioning of one token: %v", err)
	}
	// Open copied the PIN: a caller wiping its config does not break the
	// signer's re-login, and Close wipes only the signer's copy.
	clear(cfg.PIN)
	s.Close()
	if _, err := s.Sign("prevote", []byte("x")); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Sign after Close: %v", err)
	}
}

// TestReloginAfterSessionsClosed closes every session of the token behind
// the signer's back, which also logs the token out and invalidates the
// key handle; the next signature must re-open, re-login and succeed.
func TestReloginAfterSessionsClosed(t *testing.T) {
	cfg := provision(t, t.TempDir(), "valnet-relogin")
	s := open(t, cfg)
	signAndVerify(t, s, 3)
	for i := 1; i <= 3; i++ {
		ts, err := s.mod.findSlot(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.mod.ctx.CloseAllSessions(ts.id); err != nil {
			t.Fatal(err)
		}
		signAndVerify(t, s, 2)
		if s.reopens != i {
			t.Fatalf("reopens = %d after %d losses", s.reopens, i)
		}
	}
	// A logout alone (the session stays) is healed the same way.
	if err := s.mod.ctx.Logout(s.sess); err != nil {
		t.Fatal(err)
	}
	signAndVerify(t, s, 1)
	if s.reopens != 4 {
		t.Errorf("reopens = %d after a logout", s.reopens)
	}
}

func TestClearErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := provision(t, dir, "valnet-err")
	// Objects for the wrong-type and wrong-pair cases.
	addKeys(t, cfg)
	notLib := filepath.Join(dir, "softhsm2.conf")
	with := func(f func(c *Config)) Config {
		c := cfg
		f(&c)
		return c
	}
	ts, err := func() (tokenSlot, error) {
		s := open(t, cfg)
		defer s.Close()
		return s.mod.findSlot(cfg)
	}()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"module not found", with(func(c *Config) { c.Module = filepath.Join(dir, "nope.so") }),
			[]string{"module " + filepath.Join(dir, "nope.so") + " not found"}},
		{"not a library", with(func(c *Config) { c.Module = notLib }), []string{"cannot load module " + notLib}},
		{"token not found", with(func(c *Config) { c.Token = "nope" }),
			[]string{`token "nope" not found`, `"valnet-err" (slot `}},
		{"slot without token", with(func(c *Config) { c.Token, c.Slot, c.HasSlot = "", 987654, true }),
			[]string{"no initialised token in slot 987654", `"valnet-err"`}},
		{"wrong PIN", with(func(c *Config) { c.PIN = []byte("wrong-pin") }),
			[]string{`wrong PIN for token "valnet-err"`, "CKR_PIN_INCORRECT"}},
		{"no PIN", with(func(c *Config) { c.PIN = nil }), []string{`key "consensus" on token "valnet-err"`, "no PIN given"}},
		{"key missing", with(func(c *Config) { c.KeyLabel = "nope" }),
			[]string{`no private key labelled "nope" on token "valnet-err"`, `"consensus"`}},
		{"key of another type", with(func(c *Config) { c.KeyLabel = "p256" }),
			[]string{`key "p256" on token "valnet-err" has key type EC (ECDSA)`, "CKK_EC_EDWARDS"}},
		{"halves of two pairs", with(func(c *Config) { c.KeyLabel = "mixed" }),
			[]string{"self-test signature does not verify"}},
		{"public key missing", with(func(c *Config) { c.KeyLabel = "nopub" }),
			[]string{`0 public key objects labelled "nopub"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(c.cfg)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
		})
	}
	t.Run("mechanism not supported", func(t *testing.T) {
		saved := signMechanisms
		signMechanisms = []uint{ckmEdDSA, p11.CKM_VENDOR_DEFINED | 0x1234}
		defer func() { signMechanisms = saved }()
		_, err := Open(cfg)
		if err == nil || !strings.Contains(err.Error(), `token "valnet-err"`) || !strings.Contains(err.Error(), "does not support mechanism 0x80001234") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("by slot", func(t *testing.T) {
		s := open(t, with(func(c *Config) { c.Token, c.Slot, c.HasSlot = "", ts.id, true }))
		signAndVerify(t, s, 1)
		if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "already used by another signer") {
			t.Errorf("a second signer on the key: %v", err)
		}
	})
	modules.Lock()
	defer modules.Unlock()
	if len(modules.m) != 0 {
		t.Errorf("modules still loaded after every signer closed: %v", modules.m)
	}
}

// addKeys puts on cfg's token: an ECDSA P-256 pair "p256"; "mixed", the
// private half of one Ed25519 pair beside the public half of another;
// and "nopub", an Ed25519 private key without its public key object.
func addKeys(t *testing.T, cfg Config) {
	t.Helper()
	m, err := acquire(cfg.Module, cfg.SoftHSMConf)
	if err != nil {
		t.Fatal(err)
	}
	defer m.release()
	ts, err := m.findSlot(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := m.ctx.OpenSession(ts.id, p11.CKF_SERIAL_SESSION|p11.CKF_RW_SESSION)
	if err != nil {
		t.Fatal(err)
	}
	defer m.ctx.CloseSession(sess)
	if err := m.login(sess, p11.CKU_USER, cfg.PIN, cfg.Token); err != nil {
		t.Fatal(err)
	}
	p256 := []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07}
	if _, _, err := m.ctx.GenerateKeyPair(sess, []*p11.Mechanism{p11.NewMechanism(p11.CKM_EC_KEY_PAIR_GEN, nil)},
		[]*p11.Attribute{p11.NewAttribute(p11.CKA_TOKEN, true), p11.NewAttribute(p11.CKA_LABEL, "p256"), p11.NewAttribute(p11.CKA_EC_PARAMS, p256)},
		[]*p11.Attribute{p11.NewAttribute(p11.CKA_TOKEN, true), p11.NewAttribute(p11.CKA_PRIVATE, true), p11.NewAttribute(p11.CKA_SIGN, true), p11.NewAttribute(p11.CKA_LABEL, "p256")}); err != nil {
		t.Fatal(err)
	}
	relabel := func(class uint, from, to string) {
		h, n, err := m.keyObject(sess, class, from)
		if err != nil || n != 1 {
			t.Fatalf("find %s: %d, %v", from, n, err)
		}
		if to == "" {
			err = m.ctx.DestroyObject(sess, h)
		} else {
			err = m.ctx.SetAttributeValue(sess, h, []*p11.Attribute{p11.NewAttribute(p11.CKA_LABEL, to)})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"mixed", "other", "nopub"} {
		if _, err := m.generateKeyPair(sess, l); err != nil {
			t.Fatal(err)
		}
	}
	relabel(p11.CKO_PUBLIC_KEY, "mixed", "")
	relabel(p11.CKO_PUBLIC_KEY, "other", "mixed")
	relabel(p11.CKO_PUBLIC_KEY, "nopub", "")
}

// TestTwoTokensConcurrently signs on two tokens of one module from several
// goroutines at once (two per signer: the session lock must hold). Run
// with -race.
func TestTwoTokensConcurrently(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, provision(t, dir, "valnet-one")), open(t, provision(t, dir, "valnet-two"))
	if string(a.PubKey().Bytes()) == string(b.PubKey().Bytes()) {
		t.Fatal("two tokens, one key")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, s := range []*Signer{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pub := ed25519.PublicKey(s.PubKey().Bytes())
			for i := 0; i < 150; i++ {
				msg := []byte(fmt.Sprintf("%s message %d", s.cfg.Token, i))
				sig, err := s.Sign("precommit", msg)
				if err == nil && !ed25519.Verify(pub, msg, sig) {
					err = fmt.Errorf("%s: signature %d does not verify", s.cfg.Token, i)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestConfigOfAnotherRunRefused(t *testing.T) {
	s := open(t, provision(t, t.TempDir(), "valnet-first"))
	_, err := Provision(t.TempDir(), "valnet-second", "")
	if err == nil || !strings.Contains(err.Error(), "already in use in this process with SOFTHSM2_CONF") {
		t.Errorf("provisioning in a second dir while the first is open: %v", err)
	}
	s.Close()
	// Once closed, the module is finalised and a new dir works.
	s2 := open(t, provision(t, t.TempDir(), "valnet-third"))
	signAndVerify(t, s2, 1)
}

func TestListAndKeygen(t *testing.T) {
	dir := t.TempDir()
	cfg := provision(t, dir, "valnet-list")
	provision(t, dir, "valnet-other")
	pub, err := Keygen(Config{Module: cfg.Module, Token: cfg.Token, KeyLabel: "second", PIN: cfg.PIN})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Keygen(Config{Module: cfg.Module, Token: cfg.Token, KeyLabel: "second", PIN: cfg.PIN}); err == nil || !strings.Contains(err.Error(), `already has 2 object(s) labelled "second"`) {
		t.Errorf("second keygen with one label: %v", err)
	}
	s := open(t, Config{Module: cfg.Module, Token: cfg.Token, KeyLabel: "second", PIN: cfg.PIN})
	if string(s.PubKey().Bytes()) != string(pub.Bytes()) {
		t.Errorf("keygen printed %X, the signer reads %X", pub.Bytes(), s.PubKey().Bytes())
	}
	signAndVerify(t, s, 1)
	s.Close()

	slots, err := List(cfg.Module, cfg.Token, cfg.PIN)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	free := 0
	for _, sl := range slots {
		if !sl.HasToken || !sl.Token.Initialized {
			free++
			continue
		}
		for _, o := range sl.Token.Objects {
			seen = append(seen, fmt.Sprintf("%s/%s/%s/%s", sl.Token.Label, o.Class, o.Label, o.KeyType))
			if o.Label == "second" && o.PubKey != nil && string(o.PubKey.Bytes()) != string(pub.Bytes()) {
				t.Errorf("listed public key differs")
			}
		}
		if sl.Token.Label == cfg.Token && (!sl.Token.LoggedIn || !sl.Token.EdDSA) {
			t.Errorf("token %+v: want logged in, with EdDSA", sl.Token)
		}
		if sl.Token.Label == "valnet-other" && (sl.Token.LoggedIn || !strings.Contains(sl.Token.Note, "public objects only")) {
			t.Errorf("the other token was logged in to, or says nothing: %+v", sl.Token)
		}
	}
	got := strings.Join(seen, " ")
	for _, w := range []string{"valnet-list/private key/consensus/EdDSA", "valnet-list/public key/consensus/Ed25519",
		"valnet-list/private key/second/EdDSA", "valnet-other/public key/consensus/Ed25519"} {
		if !strings.Contains(got, w) {
			t.Errorf("list lacks %s: %s", w, got)
		}
	}
	if strings.Contains(got, "valnet-other/private key") || free != 1 {
		t.Errorf("private objects of a token without its PIN listed, or %d free slots: %s", free, got)
	}
	if _, err := List(cfg.Module, "", cfg.PIN); err == nil || !strings.Contains(err.Error(), "2 initialised tokens") {
		t.Errorf("a PIN without a token among two: %v", err)
	}
	if _, err := List(cfg.Module, cfg.Token, []byte("wrong-pin")); err == nil || !strings.Contains(err.Error(), "wrong PIN") {
		t.Errorf("list with a wrong PIN: %v", err)
	}
}
