package signerbench

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/cloudflare/circl/sign"
	"github.com/cloudflare/circl/sign/bls"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"
	"github.com/cloudflare/circl/sign/mldsa/mldsa65"
	"github.com/cloudflare/circl/sign/mldsa/mldsa87"
	"github.com/cloudflare/circl/sign/slhdsa"
	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/crypto/secp256k1"
	"github.com/cometbft/cometbft/types"
	dsecp "github.com/decred/dcrd/dcrec/secp256k1/v4"
	decdsa "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

// keyPair is one generated key, as closures so every scheme looks alike.
type keyPair struct {
	sign   func(msg []byte) ([]byte, error)
	verify func(msg, sig []byte) bool
}

// algorithm is a signature scheme measured bare: no guard, no file, no
// transport.
type algorithm struct {
	name string
	lib  string // where the code comes from: goes into the note
	// unavailable, when set, is why the scheme cannot be measured in this
	// build; its rows say so instead of a number.
	unavailable string
	newKey      func() (keyPair, error)
}

var algorithms = []algorithm{
	{name: "ed25519", lib: "cometbft crypto/ed25519", newKey: cometKey(func() crypto.PrivKey { return ed25519.GenPrivKey() })},
	{name: "secp256k1", lib: "cometbft crypto/secp256k1", newKey: cometKey(func() crypto.PrivKey { return secp256k1.GenPrivKey() })},
	{name: "secp256k1-decred", lib: "decred secp256k1/v4 ecdsa, DER", newKey: decredKey},
	// CometBFT's own bls12381 needs cgo blst (build tag bls12381); circl is
	// pure Go, so this row is a lower bound on the speed blst would give.
	{name: "bls12-381", lib: "circl sign/bls, min-pk like CometBFT's", newKey: blsKey},
	{name: "ml-dsa-44", lib: "circl sign/mldsa", newKey: circlKey(mldsa44.Scheme())},
	{name: "ml-dsa-65", lib: "circl sign/mldsa", newKey: circlKey(mldsa65.Scheme())},
	{name: "ml-dsa-87", lib: "circl sign/mldsa", newKey: circlKey(mldsa87.Scheme())},
	{name: "slh-dsa-sha2-128s", lib: "circl sign/slhdsa", newKey: circlKey(slhdsa.SHA2_128s.Scheme())},
	{name: "slh-dsa-sha2-128f", lib: "circl sign/slhdsa", newKey: circlKey(slhdsa.SHA2_128f.Scheme())},
}

func cometKey(gen func() crypto.PrivKey) func() (keyPair, error) {
	return func() (keyPair, error) {
		k := gen()
		pub := k.PubKey() // derived here so keygen pays for it, as a node does
		return keyPair{sign: k.Sign, verify: pub.VerifySignature}, nil
	}
}

func decredKey() (keyPair, error) {
	k, err := dsecp.GeneratePrivateKey()
	if err != nil {
		return keyPair{}, err
	}
	pub := k.PubKey()
	return keyPair{
		sign: func(msg []byte) ([]byte, error) {
			h := sha256.Sum256(msg)
			return decdsa.Sign(k, h[:]).Serialize(), nil
		},
		verify: func(msg, sig []byte) bool {
			s, err := decdsa.ParseDERSignature(sig)
			if err != nil {
				return false
			}
			h := sha256.Sum256(msg)
			return s.Verify(h[:], pub)
		},
	}, nil
}

func blsKey() (keyPair, error) {
	ikm := make([]byte, 32)
	if _, err := rand.Read(ikm); err != nil {
		return keyPair{}, err
	}
	k, err := bls.KeyGen[bls.G1](ikm, nil, nil)
	if err != nil {
		return keyPair{}, err
	}
	pub := k.PublicKey()
	return keyPair{
		sign:   func(msg []byte) ([]byte, error) { return bls.Sign(k, msg), nil },
		verify: func(msg, sig []byte) bool { return bls.Verify(pub, msg, sig) },
	}, nil
}

func circlKey(s sign.Scheme) func() (keyPair, error) {
	return func() (keyPair, error) {
		pub, priv, err := s.GenerateKey()
		if err != nil {
			return keyPair{}, err
		}
		return keyPair{
			sign: func(msg []byte) ([]byte, error) {
				// circl's slhdsa Sign returns nil on a failed signature
				// rather than an error.
				if sig := s.Sign(priv, msg, nil); len(sig) > 0 {
					return sig, nil
				}
				return nil, errors.New("empty signature")
			},
			verify: func(msg, sig []byte) bool { return s.Verify(pub, msg, sig, nil) },
		}, nil
	}
}

// msgCount is how many distinct messages the algorithm rows cycle through.
const msgCount = 16

const benchChainID = "valnet-bench-1"

// benchVote is a real precommit for a block at height: what a validator
// signs most often. Heights around 20 M make its varints as long as a
// mature chain's.
func benchVote(height int64, valAddr []byte) *cmtproto.Vote {
	hash := sha256.Sum256([]byte(fmt.Sprintf("block %d", height)))
	parts := sha256.Sum256([]byte(fmt.Sprintf("parts %d", height)))
	return &cmtproto.Vote{
		Type:   types.PrecommitType,
		Height: height,
		Round:  0,
		BlockID: cmtproto.BlockID{Hash: hash[:],
			PartSetHeader: cmtproto.PartSetHeader{Total: 1, Hash: parts[:]}},
		Timestamp:        time.Now().UTC(),
		ValidatorAddress: valAddr,
		ValidatorIndex:   3,
	}
}

const benchHeight = 20_000_000

// voteMessages are the sign bytes of n precommits at successive heights.
func voteMessages(n int) [][]byte {
	addr := bytes.Repeat([]byte{0xAB}, crypto.AddressSize)
	msgs := make([][]byte, n)
	for i := range msgs {
		msgs[i] = types.VoteSignBytes(benchChainID, benchVote(benchHeight+int64(i), addr))
	}
	return msgs
}

// runAlgorithm measures keygen, sign and verify of a. Signatures are
// checked before any number is reported: a row that times broken signing
// is worse than no row.
func runAlgorithm(ctx context.Context, o Options, a algorithm, msgs [][]byte) ([]Row, error) {
	if a.unavailable != "" {
		var rows []Row
		for _, op := range []string{OpKeygen, OpSign, OpVerify} {
			rows = append(rows, Row{Group: GroupAlgorithm, Name: a.name, Op: op, Note: NotAvailablePrefix + a.unavailable})
		}
		return rows, nil
	}
	row := func(op string, f func() (Row, error)) (Row, error) {
		progress(o, a.name, op)
		r, err := f()
		if err != nil && ctx.Err() != nil {
			return Row{}, ctx.Err()
		}
		if err != nil {
			return failedRow(GroupAlgorithm, a.name, op, err), nil
		}
		return r, nil
	}
	var rows []Row

	keygen, err := row(OpKeygen, func() (Row, error) {
		s, err := measure(ctx, o, func(int) error { _, err := a.newKey(); return err })
		return s.row(GroupAlgorithm, a.name, OpKeygen, a.lib), err
	})
	if err != nil {
		return rows, err
	}
	rows = append(rows, keygen)

	key, keyErr := a.newKey()
	sigs := make([][]byte, len(msgs))
	sgn, err := row(OpSign, func() (Row, error) {
		if keyErr != nil {
			return Row{}, fmt.Errorf("keygen: %w", keyErr)
		}
		s, err := measure(ctx, o, func(seq int) error {
			i := seq % len(msgs)
			sig, err := key.sign(msgs[i])
			sigs[i] = sig
			return err
		})
		if err != nil {
			return Row{}, err
		}
		// Every kept signature, the first one always among them, must
		// verify; checked outside the timed loop.
		for i, sig := range sigs {
			if sig != nil && !key.verify(msgs[i], sig) {
				return Row{}, fmt.Errorf("signature %d does not verify", i)
			}
		}
		return s.row(GroupAlgorithm, a.name, OpSign, joinNote(a.lib, fmt.Sprintf("sig %d B", len(sigs[0])))), nil
	})
	if err != nil {
		return rows, err
	}
	rows = append(rows, sgn)

	vfy, err := row(OpVerify, func() (Row, error) {
		if sgn.N == 0 {
			return Row{}, errors.New("no good signature to verify")
		}
		var idx []int
		for i, sig := range sigs {
			if sig != nil {
				idx = append(idx, i)
			}
		}
		// A verify that accepts anything would time nothing useful.
		bad := bytes.Clone(msgs[idx[0]])
		bad[len(bad)-1] ^= 1
		if key.verify(bad, sigs[idx[0]]) {
			return Row{}, errors.New("verify accepts a signature over a different message")
		}
		s, err := measure(ctx, o, func(seq int) error {
			i := idx[seq%len(idx)]
			if !key.verify(msgs[i], sigs[i]) {
				return fmt.Errorf("signature %d does not verify", i)
			}
			return nil
		})
		return s.row(GroupAlgorithm, a.name, OpVerify, a.lib), err
	})
	if err != nil {
		return rows, err
	}
	return append(rows, vfy), nil
}
