package signers

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/signers/ledger"
	"github.com/valnet/valnet/signers/pkcs11"
)

// The double-sign guard under crashes (docs/reliability.md): a real signer
// process - this test binary re-executed as a child, serving the signer
// chain of Build over CometBFT's privval protocol on a unix socket - is
// killed with SIGKILL by the fault knob (guardcrash.go) before or after it
// persists a new signature's high-water mark, then restarted on the same
// state file and asked, in a seeded random order, for a conflicting vote
// at the same height/round/step, the same vote again and the same vote
// with a new timestamp. No two signatures handed out may be for different
// blocks at one height/round/step, and every accept/refuse must be what
// CometBFT's own privval.FilePV decides for the same sequence (where the
// crash is: before-save, the request never happened to it; after-save,
// it signed and the answer was lost).

var (
	guardCrashes    = flag.Int("guard-crashes", envInt("VALNET_GUARD_CRASHES", 200), "crashes per backend in TestGuardSurvivesKill9 (env VALNET_GUARD_CRASHES)")
	guardCrashSeed  = flag.Int64("guard-crash-seed", int64(envInt("VALNET_GUARD_CRASH_SEED", 1)), "seed of the crash points and requests of TestGuardSurvivesKill9")
	crashChildEnv   = "VALNET_GUARD_CRASH_CHILD" // the child's crashChildConfig, JSON
	crashChildPINEv = "VALNET_GUARD_CRASH_CHILD_PIN"
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(crashChildEnv); cfg != "" {
		os.Exit(crashChild(cfg))
	}
	os.Exit(m.Run())
}

// crashChildConfig is what the child serves.
type crashChildConfig struct {
	Type   string
	Key    []byte // ed25519 private key: local and the Ledger model
	State  string
	Socket string
	PKCS11 *pkcs11.Config // PIN in crashChildPINEv
}

// crashChild is the signer process: Build's chain behind ServeRemote, until
// its stdin closes (the test is done with it) or the knob kills it.
func crashChild(text string) int {
	var c crashChildConfig
	if err := json.Unmarshal([]byte(text), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	spec := Spec{Type: c.Type, Key: ed25519.PrivKey(c.Key), StateFile: c.State}
	switch c.Type {
	case TypePKCS11:
		c.PKCS11.PIN = []byte(os.Getenv(crashChildPINEv))
		spec.PKCS11 = c.PKCS11
	case TypeLedger:
		spec.Ledger = &LedgerSpec{Connection: "emulator", Timing: ledger.EmulatorTiming{}}
	}
	b, err := Build(spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	srv, err := ServeRemote(ServerConfig{Network: NetUnix, Address: c.Socket, ChainID: chainID, Signer: b.Signer})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Stop()
	_ = b.Close()
	return 0
}

// crashSigner is one signer process and the node end it dials.
type crashSigner struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	node  *privval.SignerClient
	ep    *privval.SignerListenerEndpoint
	errs  *bytes.Buffer
}

func startCrashSigner(t *testing.T, c crashChildConfig, pin []byte, knob string) *crashSigner {
	t.Helper()
	_ = os.Remove(c.Socket)
	ln, err := net.Listen("unix", c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	// No retries: CometBFT's node retries a lost signer, and this test
	// wants each answer of exactly this process.
	ep := privval.NewSignerListenerEndpoint(cmtlog.NewNopLogger(), privval.NewUnixListener(ln),
		privval.SignerListenerEndpointTimeoutReadWrite(10*time.Second))
	node, err := privval.NewSignerClient(ep, chainID)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := json.Marshal(c)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+string(text), crashChildPINEv+"="+string(pin))
	if knob != "" {
		cmd.Env = append(cmd.Env, GuardCrashEnv+"="+knob)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	errs := &bytes.Buffer{}
	cmd.Stderr = errs
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &crashSigner{cmd: cmd, stdin: stdin, node: node, ep: ep, errs: errs}
	if err := node.WaitForConnection(20 * time.Second); err != nil {
		s.stop()
		t.Fatalf("signer process did not connect: %v\n%s", err, errs)
	}
	return s
}

// stop ends the process (closing its stdin) and the node end; it returns
// how the process ended.
func (s *crashSigner) stop() *os.ProcessState {
	_ = s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	_ = s.ep.Stop()
	return s.cmd.ProcessState
}

func killedBySIGKILL(st *os.ProcessState) bool {
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// crashVote is a vote at height h (round 0) of typ for block b (0: nil).
func crashVote(typ cmtproto.SignedMsgType, h int64, b byte, ts time.Time) *cmtproto.Vote {
	v := vote(typ, h, 0, b)
	v.Timestamp = ts
	return v
}

type hrs struct {
	h    int64
	r    int32
	step cmtproto.SignedMsgType
}

// handedOut checks every signature the node got: it verifies, and no other
// block was handed out at its height/round/step.
type handedOut struct {
	pub       crypto.PubKey
	blocks    map[hrs][]byte // block hash handed out (nil: nil vote)
	given     int
	conflicts int
}

func (h *handedOut) add(t *testing.T, v *cmtproto.Vote) {
	t.Helper()
	if !h.pub.VerifySignature(types.VoteSignBytes(chainID, v), v.Signature) {
		t.Fatalf("h=%d: the signature handed out does not verify", v.Height)
	}
	h.given++
	k := hrs{v.Height, v.Round, v.Type}
	if prev, ok := h.blocks[k]; ok && !bytes.Equal(prev, v.BlockID.Hash) {
		h.conflicts++
		t.Errorf("CONFLICTING SIGNATURE at h=%d r=%d %v: block %X, and before %X", v.Height, v.Round, v.Type, v.BlockID.Hash, prev)
		return
	}
	h.blocks[k] = bytes.Clone(v.BlockID.Hash)
}

// earlier is a vote for another block at a random height/round/step below
// h that was handed out; nil if none.
func (h *handedOut) earlier(rng *rand.Rand, below int64) *cmtproto.Vote {
	var ks []hrs
	for k := range h.blocks {
		if k.h < below {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return nil
	}
	slices.SortFunc(ks, func(a, b hrs) int { return cmp.Compare(a.h, b.h)*4 + cmp.Compare(a.step, b.step) })
	k := ks[rng.Intn(len(ks))]
	other := byte(0xCC)
	if bytes.Equal(h.blocks[k], bytes.Repeat([]byte{0xCC}, 32)) {
		other = 0xDD
	}
	return crashVote(k.step, k.h, other, time.Unix(1700000000, 0).UTC())
}

func TestGuardSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a signer process per crash")
	}
	n := *guardCrashes
	backends := []struct {
		name  string
		setup func(t *testing.T, c *crashChildConfig) []byte // returns the PIN, if any
	}{
		{TypeLocal, func(*testing.T, *crashChildConfig) []byte { return nil }},
		{TypePKCS11, func(t *testing.T, c *crashChildConfig) []byte {
			if !pkcs11.Available {
				t.Skip("PKCS#11 needs cgo")
			}
			if _, err := pkcs11.FindSoftHSM(); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("CI is set and %v", err)
				}
				t.Skip(err)
			}
			cfg, err := pkcs11.Provision(filepath.Join(t.TempDir(), "hsm"), "crash", "")
			if err != nil {
				t.Fatal(err)
			}
			pin := cfg.PIN
			cfg.PIN = nil
			c.PKCS11 = &cfg
			return pin
		}},
		{TypeLedger, func(*testing.T, *crashChildConfig) []byte { return nil }},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			dir := t.TempDir()
			key := ed25519.GenPrivKeyFromSecret([]byte("guard-crash-" + be.name))
			c := crashChildConfig{Type: be.name, Key: key, State: filepath.Join(dir, "state.json"), Socket: filepath.Join(dir, "pv.sock")}
			pin := be.setup(t, &c)
			ref := privval.NewFilePV(key, filepath.Join(dir, "ref_key.json"), filepath.Join(dir, "ref_state.json"))
			sameKey := be.name != TypePKCS11 // the token made its own key
			rng := rand.New(rand.NewSource(*guardCrashSeed))
			t0 := time.Unix(1700000000, 0).UTC()

			var out *handedOut
			type pending struct {
				typ   cmtproto.SignedMsgType
				h     int64
				point string
			}
			var prev *pending
			points := map[string]int{}
			decisions := 0
			for i := 0; i <= n; i++ {
				h := int64(i + 1)
				crash := i < n
				point := CrashBeforeSave
				if rng.Intn(2) == 1 {
					point = CrashAfterSave
				}
				knob := ""
				if crash {
					knob = fmt.Sprintf("%s@%d", point, h)
				}
				s := startCrashSigner(t, c, pin, knob)
				if out == nil {
					pub, err := s.node.GetPubKey()
					if err != nil {
						s.stop()
						t.Fatal(err)
					}
					out = &handedOut{pub: pub, blocks: map[hrs][]byte{}}
				}
				// The restarted signer, asked about the crashed request.
				if prev != nil {
					reqs := []*cmtproto.Vote{
						crashVote(prev.typ, prev.h, 0xBB, t0),                  // another block
						crashVote(prev.typ, prev.h, 0, t0),                     // nil
						crashVote(prev.typ, prev.h, 0xAA, t0),                  // the same vote
						crashVote(prev.typ, prev.h, 0xAA, t0.Add(time.Second)), // a new timestamp
					}
					// And a conflicting vote at an earlier height/round/step
					// whose signature the node already has.
					if earlier := out.earlier(rng, prev.h); earlier != nil {
						reqs = append(reqs, earlier)
					}
					rng.Shuffle(len(reqs), func(a, b int) { reqs[a], reqs[b] = reqs[b], reqs[a] })
					for _, v := range reqs {
						mine, theirs := proto(v), proto(v)
						err := s.node.SignVote(chainID, mine, false)
						refErr := ref.SignVote(chainID, theirs, false)
						decisions++
						if err == nil {
							out.add(t, mine)
						}
						if (err == nil) != (refErr == nil) {
							t.Errorf("h=%d %v block %X ts+%v after a %s crash: signer says %v, FilePV says %v",
								v.Height, v.Type, v.BlockID.Hash, v.Timestamp.Sub(t0), prev.point, err, refErr)
							continue
						}
						if err != nil {
							continue
						}
						if sameKey && (!bytes.Equal(mine.Signature, theirs.Signature) || !mine.Timestamp.Equal(theirs.Timestamp)) {
							t.Errorf("h=%d: signer and FilePV hand out different signatures or timestamps (%v, %v)", v.Height, mine.Timestamp, theirs.Timestamp)
						}
					}
				}
				if !crash {
					if st := s.stop(); !st.Success() {
						t.Errorf("last signer process: %v\n%s", st, s.errs)
					}
					break
				}
				typ := types.PrevoteType
				if rng.Intn(2) == 1 {
					typ = types.PrecommitType
				}
				v := crashVote(typ, h, 0xAA, t0)
				err := s.node.SignVote(chainID, proto(v), false)
				st := s.stop()
				if err == nil || !killedBySIGKILL(st) {
					t.Fatalf("h=%d %s: the knob did not kill the signer (sign err %v, process %v)\n%s", h, point, err, st, s.errs)
				}
				points[point]++
				if point == CrashAfterSave {
					_ = ref.SignVote(chainID, proto(v), false) // signed and saved; the answer was lost
				}
				prev = &pending{typ: typ, h: h, point: point}
			}
			t.Logf("%s: %d crashes (%d before-save, %d after-save), %d requests after restarts judged against FilePV, %d signatures handed out, %d conflicting",
				be.name, n, points[CrashBeforeSave], points[CrashAfterSave], decisions, out.given, out.conflicts)
		})
	}
}

func proto(v *cmtproto.Vote) *cmtproto.Vote {
	c := *v
	c.BlockID.Hash = bytes.Clone(v.BlockID.Hash)
	c.BlockID.PartSetHeader.Hash = bytes.Clone(v.BlockID.PartSetHeader.Hash)
	return &c
}

func TestParseGuardCrash(t *testing.T) {
	for _, c := range []struct {
		in, point string
		height    int64
		err       string
	}{
		{in: "before-save", point: CrashBeforeSave},
		{in: "after-save@17", point: CrashAfterSave, height: 17},
		{in: "after-save@0", err: `height "0" is not a height >= 1`},
		{in: "after-save@x", err: `height "x"`},
		{in: "during-save", err: `point "during-save" (allowed: before-save, after-save)`},
		{in: "", err: `point ""`},
	} {
		p, h, err := ParseGuardCrash(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), GuardCrashEnv) {
				t.Errorf("ParseGuardCrash(%q) err %v, want %q", c.in, err, c.err)
			}
		} else if err != nil || p != c.point || h != c.height {
			t.Errorf("ParseGuardCrash(%q) = %q, %d, %v", c.in, p, h, err)
		}
	}
}
